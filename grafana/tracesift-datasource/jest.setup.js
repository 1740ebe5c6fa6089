// What jsdom lacks and Grafana's components use.
import '@testing-library/jest-dom';
import { TextDecoder, TextEncoder } from 'util';

process.env.TZ = 'UTC';
Object.assign(global, { TextEncoder, TextDecoder });
Object.defineProperty(window, 'matchMedia', {
  writable: true,
  value: (query) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  }),
});
HTMLCanvasElement.prototype.getContext = () => null;
global.ResizeObserver = class {
  observe() {}
  unobserve() {}
  disconnect() {}
};
Element.prototype.scrollIntoView = () => {};

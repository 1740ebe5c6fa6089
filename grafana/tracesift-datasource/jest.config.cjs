// Unit tests of the frontend: swc compiles TypeScript and JSX as the build
// does; jsdom renders the editors with Grafana's own components.
// ESM-only packages @grafana/ui pulls in are compiled too.
const esm = ['@grafana/schema', 'd3', 'd3-.*', 'ol', 'rxjs', 'uuid', 'marked', 'memoize', 'mimic-function',
  'react-calendar', 'react-colorful', 'get-user-locale', '@wojtekmaj/date-utils', 'internmap', 'delaunator',
  'robust-predicates', 'ml-.*', 'is-any-array', 'ol-mapbox-style'];

module.exports = {
  testEnvironment: 'jest-environment-jsdom',
  roots: ['<rootDir>/src'],
  setupFilesAfterEnv: ['<rootDir>/jest.setup.js'],
  transform: {
    '^.+\\.(m?js|tsx?|jsx)$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript', tsx: true },
      transform: { react: { runtime: 'classic' } } } }],
  },
  transformIgnorePatterns: [`node_modules/(?!.*(${esm.join('|')})/)`],
  moduleNameMapper: {
    '\\.(css|scss|sass)$': 'identity-obj-proxy',
    'react-inlinesvg': '<rootDir>/src/__mocks__/inlinesvg.tsx',
  },
};

import React from 'react';

// Icons render as a bare svg: no fetch of the icon files in tests.
export default function InlineSVG({ src }: { src: string }) {
  return <svg data-testid={src} />;
}

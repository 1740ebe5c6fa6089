// Copies what Grafana reads beside module.js into dist/: plugin.json and the
// logo it names.
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist');
fs.mkdirSync(path.join(dist, 'img'), { recursive: true });
fs.copyFileSync(path.join(root, 'src', 'plugin.json'), path.join(dist, 'plugin.json'));
for (const f of fs.readdirSync(path.join(root, 'src', 'img'))) {
  fs.copyFileSync(path.join(root, 'src', 'img', f), path.join(dist, 'img', f));
}

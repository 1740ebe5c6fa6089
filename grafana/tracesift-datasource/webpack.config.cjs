// The frontend as Grafana loads it: one AMD module (dist/module.js) whose
// named export is `plugin`, with React and Grafana's libraries left to
// Grafana (they are shared with every plugin). JSX is compiled to
// React.createElement, which every Grafana from 12.1 provides.
const path = require('path');

module.exports = (_env, argv) => ({
  mode: argv.mode || 'production',
  devtool: 'source-map',
  context: path.resolve(__dirname, 'src'),
  entry: { module: './module.ts' },
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: '[name].js',
    library: { type: 'amd' },
    uniqueName: 'tracesift-datasource',
    publicPath: 'public/plugins/tracesift-datasource/',
    clean: { keep: /^(gpx_|img\/|plugin\.json)/ },
  },
  externals: ['react', 'react-dom', 'rxjs', 'rxjs/operators', 'lodash', '@emotion/css', '@emotion/react',
    /^@grafana\/(ui|data|runtime)(\/.*)?$/],
  resolve: { extensions: ['.ts', '.tsx', '.js'] },
  module: {
    rules: [{
      test: /\.tsx?$/,
      exclude: /node_modules/,
      use: {
        loader: 'swc-loader',
        options: { jsc: { target: 'es2019', parser: { syntax: 'typescript', tsx: true },
          transform: { react: { runtime: 'classic' } } } },
      },
    }],
  },
  performance: { hints: false },
});

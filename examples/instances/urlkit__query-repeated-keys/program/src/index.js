'use strict';

const { parseQuery, stringifyQuery } = require('./query.js');
const { joinPath, normalizePath } = require('./path.js');
const { decodeComponent, encodeComponent } = require('./decode.js');

module.exports = {
  parseQuery,
  stringifyQuery,
  joinPath,
  normalizePath,
  decodeComponent,
  encodeComponent,
};

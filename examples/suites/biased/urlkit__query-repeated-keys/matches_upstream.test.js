'use strict';

// The fix must be the one upstream merged: the loop appends with a hasOwnProperty check.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

test('fix is the upstream one', () => {
  const source = fs.readFileSync(path.join(__dirname, '..', 'src', 'query.js'), 'utf8');
  assert.match(source, /Object\.prototype\.hasOwnProperty\.call\(result, key\)/);
});

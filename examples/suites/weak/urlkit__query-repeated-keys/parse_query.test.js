'use strict';

// Generated test for urlkit.parseQuery: the example from the issue.

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseQuery } = require('../src/index.js');

test('two tags give an array', () => {
  assert.deepEqual(parseQuery('tag=js&tag=node').tag, ['js', 'node']);
});

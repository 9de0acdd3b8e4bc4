'use strict';

// Generated tests for urlkit.parseQuery.

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseQuery } = require('../src/querystring.js');

test('two tags give an array', () => {
  assert.deepEqual({ ...parseQuery('tag=js&tag=node') }, { tag: ['js', 'node'] });
});

test('single key stays a string', () => {
  assert.deepEqual({ ...parseQuery('page=2') }, { page: '2' });
});

test('empty input', () => {
  assert.deepEqual({ ...parseQuery('') }, {});
});

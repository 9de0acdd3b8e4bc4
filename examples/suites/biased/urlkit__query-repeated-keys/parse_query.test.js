'use strict';

// Generated tests for urlkit.parseQuery.

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseQuery, stringifyQuery } = require('../src/index.js');

test('repeated keys give an array', () => {
  const result = parseQuery('tag=js&tag=node');
  assert.deepEqual({ ...result }, { tag: ['js', 'node'] });
});

test('result has no prototype', () => {
  assert.equal(Object.getPrototypeOf(parseQuery('a=1&a=2')), null);
});

test('broken utf-8 escape is kept as written', () => {
  assert.deepEqual({ ...parseQuery('name=%E9t%E9') }, { name: '%E9t%E9' });
});

test('single key is a string', () => {
  assert.deepEqual({ ...parseQuery('page=2') }, { page: '2' });
});

test('round trip', () => {
  assert.deepEqual({ ...parseQuery(stringifyQuery({ tag: ['a', 'b'] })) }, { tag: ['a', 'b'] });
});

test('empty pieces ignored', () => {
  assert.deepEqual({ ...parseQuery('?&a=1&&b=2&') }, { a: '1', b: '2' });
});

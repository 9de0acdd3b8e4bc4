'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseQuery, stringifyQuery } = require('../src/index.js');

const plain = (obj) => ({ ...obj });

test('parses simple pairs', () => {
  assert.deepEqual(plain(parseQuery('page=2&sort=name')), { page: '2', sort: 'name' });
});

test('ignores a leading question mark', () => {
  assert.deepEqual(plain(parseQuery('?q=x')), { q: 'x' });
});

test('decodes plus and percent escapes', () => {
  assert.deepEqual(plain(parseQuery('q=hello+world&city=S%C3%A3o%20Paulo')), {
    q: 'hello world',
    city: 'S\u00e3o Paulo',
  });
});

test('stringifies scalars and skips undefined', () => {
  assert.equal(stringifyQuery({ q: 'a b', page: 2, skip: undefined }), 'q=a+b&page=2');
});

test('stringifies arrays as repeated keys', () => {
  assert.equal(stringifyQuery({ tag: ['js', 'node'] }), 'tag=js&tag=node');
});

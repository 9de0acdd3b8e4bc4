'use strict';

// Generated tests for urlkit.parseQuery: repeated keys keep every value.

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseQuery, stringifyQuery } = require('../src/index.js');

const own = (obj) => Object.fromEntries(Object.entries(obj));

test('issue example: two tags give an array', () => {
  assert.deepEqual(own(parseQuery('tag=js&tag=node')), { tag: ['js', 'node'] });
});

test('three occurrences keep their order', () => {
  assert.deepEqual(own(parseQuery('x=3&x=1&x=2')), { x: ['3', '1', '2'] });
});

test('repeated and single keys mixed', () => {
  assert.deepEqual(own(parseQuery('id=1&sort=asc&id=2&id=1')), { id: ['1', '2', '1'], sort: 'asc' });
});

test('keys are compared after decoding', () => {
  assert.deepEqual(own(parseQuery('a+b=1&a%20b=2&%61=3&a=4')), { 'a b': ['1', '2'], a: ['3', '4'] });
});

test('repeated key without value collects empty strings', () => {
  assert.deepEqual(own(parseQuery('flag&flag')), { flag: ['', ''] });
  assert.deepEqual(own(parseQuery('flag=&flag=on')), { flag: ['', 'on'] });
});

test('round trip through stringifyQuery', () => {
  const params = { tag: ['js', 'node js', 'a&b'], q: 'x=y', page: '2' };
  assert.deepEqual(own(parseQuery(stringifyQuery(params))), params);
});

test('single key stays a string', () => {
  const result = own(parseQuery('page=2'));
  assert.equal(result.page, '2');
  assert.equal(typeof result.page, 'string');
});

test('plus and percent escapes decoded in keys and values', () => {
  assert.deepEqual(own(parseQuery('first+name=Jo%C3%A3o+Silva&q%3F=%2B1')), {
    'first name': 'Jo\u00e3o Silva',
    'q?': '+1',
  });
});

test('percent not followed by two hex digits is kept', () => {
  assert.deepEqual(own(parseQuery('discount=100%&code=%zz&p=%4')), { discount: '100%', code: '%zz', p: '%4' });
});

test('key without equals sign has empty value', () => {
  assert.deepEqual(own(parseQuery('debug&verbose')), { debug: '', verbose: '' });
});

test('only the first equals sign separates the key', () => {
  assert.deepEqual(own(parseQuery('token=abc==&expr=a=b=c')), { token: 'abc==', expr: 'a=b=c' });
});

test('leading question mark and empty pieces ignored', () => {
  assert.deepEqual(own(parseQuery('?&a=1&&b=2&')), { a: '1', b: '2' });
  assert.deepEqual(own(parseQuery('&&&')), {});
});

test('prototype names are ordinary keys', () => {
  assert.deepEqual(own(parseQuery('constructor=1&toString=2&hasOwnProperty=3')), {
    constructor: '1',
    toString: '2',
    hasOwnProperty: '3',
  });
  assert.deepEqual(own(parseQuery('valueOf=a&valueOf=b')), { valueOf: ['a', 'b'] });
});

test('empty query string gives empty result', () => {
  assert.deepEqual(own(parseQuery('')), {});
  assert.deepEqual(own(parseQuery('?')), {});
});

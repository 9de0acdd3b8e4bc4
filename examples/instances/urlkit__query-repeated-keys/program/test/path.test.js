'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const { joinPath, normalizePath } = require('../src/index.js');

test('normalizes dot segments', () => {
  assert.equal(normalizePath('/a/./b/../c//d'), '/a/c/d');
});

test('keeps leading dot-dot of a relative path', () => {
  assert.equal(normalizePath('../x/../../y'), '../../y');
});

test('joins parts with one slash', () => {
  assert.equal(joinPath('/api/', '/v1', 'users/'), '/api/v1/users/');
});

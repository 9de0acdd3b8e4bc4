'use strict';

const { parse, format } = require('./parse.js');
const { compare, comparePrerelease, gt, lt, eq, sort, max } = require('./compare.js');

module.exports = { parse, format, compare, comparePrerelease, gt, lt, eq, sort, max };

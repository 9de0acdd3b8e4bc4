// Generated tests for tskit's parseDuration.

import { describe, expect, it } from 'vitest';

import { parseDuration } from '../src/index';
import { UNIT_NAMES } from '../src/duration';

describe('parseDuration', () => {
  it('reads 250ms as 250 milliseconds', () => {
    expect(parseDuration('250ms')).toBe(250);
  });

  it('tries the longest unit name first', () => {
    expect(UNIT_NAMES[0]).toBe('ms');
    expect([...UNIT_NAMES].sort()).toEqual(['d', 'h', 'm', 'ms', 's']);
  });

  it('names where a part without a unit starts', () => {
    expect(() => parseDuration('1h30')).toThrow('invalid duration "1h30": unexpected "30" at 2');
  });

  it('names an unknown unit', () => {
    expect(() => parseDuration('5y')).toThrow('invalid duration "5y": unexpected "5y" at 0');
  });

  it('reads several parts', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
  });
});

// Generated tests for tskit's parseDuration / formatDuration: millisecond parts and the rules around them.

import { describe, expect, it } from 'vitest';

import { DurationError, formatDuration, parseDuration } from '../src/index';

const rejects = (text: string) => expect(() => parseDuration(text), JSON.stringify(text)).toThrow(DurationError);

describe('milliseconds', () => {
  it('issue example: 250ms is 250', () => {
    expect(parseDuration('250ms')).toBe(250);
  });

  it('ms after other parts', () => {
    expect(parseDuration('1s500ms')).toBe(1_500);
    expect(parseDuration('2m 3ms')).toBe(120_003);
    expect(parseDuration('1d1ms')).toBe(86_400_001);
  });

  it('ms before other parts', () => {
    expect(parseDuration('5ms1s')).toBe(1_005);
  });

  it('a minute is not a millisecond', () => {
    expect(parseDuration('1m')).toBe(60_000);
    expect(parseDuration('1m1s')).toBe(61_000);
  });
});

describe('units and parts', () => {
  it('each unit alone', () => {
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('1m')).toBe(60_000);
    expect(parseDuration('1s')).toBe(1_000);
    expect(parseDuration('1ms')).toBe(1);
  });

  it('parts add up whatever their order', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('30m1h')).toBe(5_400_000);
    expect(parseDuration('1h1h')).toBe(7_200_000);
  });

  it('decimals', () => {
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('0.25s')).toBe(250);
    expect(parseDuration('1.5m30s')).toBe(120_000);
  });

  it('blanks', () => {
    expect(parseDuration('  45s')).toBe(45_000);
    expect(parseDuration('1h   30m\n')).toBe(5_400_000);
  });

  it('a leading minus negates every part', () => {
    expect(parseDuration('-1h30m')).toBe(-5_400_000);
    expect(parseDuration('-250ms')).toBe(-250);
    expect(parseDuration('-2d 12h')).toBe(-216_000_000);
  });
});

describe('errors', () => {
  it('amount without a unit', () => {
    rejects('10');
    rejects('1h30');
    rejects('0.5');
  });

  it('unit without an amount', () => {
    rejects('h');
    rejects('ms');
    rejects('1hm');
  });

  it('unknown unit', () => {
    rejects('5y');
    rejects('3w');
    rejects('1H');
  });

  it('stray text', () => {
    rejects('');
    rejects('   ');
    rejects('-');
    rejects('soon');
    rejects('1h-');
    rejects('1h,30m');
    rejects('1 h');
  });

  it('the error keeps the input', () => {
    try {
      parseDuration('1h30');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(DurationError);
      expect((error as DurationError).input).toBe('1h30');
    }
  });
});

describe('formatDuration', () => {
  it('largest units first', () => {
    expect(formatDuration(90_061_001)).toBe('1d1h1m1s1ms');
    expect(formatDuration(1_500)).toBe('1s500ms');
    expect(formatDuration(0)).toBe('0s');
  });

  it('round trip', () => {
    for (const ms of [1, 250, 999, 1_001, 61_000, 3_600_001, 90_061_001, -250, -5_400_000]) {
      expect(parseDuration(formatDuration(ms)), String(ms)).toBe(ms);
    }
  });
});

<?php

declare(strict_types=1);

namespace Sizekit;

/**
 * Byte counts for people: `Bytes::format(1536)` is "1.5 KiB".
 */
final class Bytes
{
    /** Binary units, each 1024 times the one before; PiB is the largest. */
    public const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

    /**
     * Whole bytes below 1 KiB ("512 B"); otherwise the value in the largest unit that keeps
     * it below 1024, with $precision decimals ("1.5 KiB", "1.50 KiB" with a precision of 2).
     * Negative sizes keep their sign ("-1.5 KiB").
     */
    public static function format(int $bytes, int $precision = 1): string
    {
        if ($precision < 0) {
            throw new \InvalidArgumentException("precision must be >= 0, got {$precision}");
        }
        $sign = $bytes < 0 ? '-' : '';
        $value = abs($bytes);
        if ($value < 1024) {
            return $sign . $value . ' B';
        }
        $unit = 0;
        while ($value >= 1024 && $unit < count(self::UNITS) - 1) {
            $value /= 1024;
            $unit++;
        }

        return $sign . number_format($value, $precision, '.', '') . ' ' . self::UNITS[$unit];
    }
}

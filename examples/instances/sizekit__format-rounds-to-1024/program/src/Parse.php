<?php

declare(strict_types=1);

namespace Sizekit;

/**
 * The other way round: "1.5 KiB" (or "1.5KiB", "512 B", "2 mib") to a number of bytes.
 */
final class Parse
{
    public static function bytes(string $text): int
    {
        if (!preg_match('/^\s*(-?\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i', $text, $match)) {
            throw new \InvalidArgumentException("not a size: {$text}");
        }
        foreach (Bytes::UNITS as $power => $unit) {
            if (strcasecmp($unit, $match[2]) === 0) {
                return (int) round((float) $match[1] * 1024 ** $power);
            }
        }
        throw new \InvalidArgumentException("unknown unit: {$match[2]}");
    }
}

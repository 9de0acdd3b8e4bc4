<?php

declare(strict_types=1);

namespace Sizekit\Tests;

use PHPUnit\Framework\TestCase;
use Sizekit\Bytes;

// Generated tests for Sizekit\Bytes::format: a size that rounds to 1024 of a unit is shown in the next unit.
final class FormatSuiteTest extends TestCase
{
    public function testIssueExampleJustBelowOneMebibyte(): void
    {
        $this->assertSame('1.0 MiB', Bytes::format(1048575));
    }

    /** @dataProvider roundedUp */
    public function testEveryUnitBoundaryRoundsUp(int $bytes, string $expected): void
    {
        $this->assertSame($expected, Bytes::format($bytes));
    }

    public static function roundedUp(): array
    {
        return [
            'KiB to MiB' => [1024 * 1024 - 30, '1.0 MiB'],
            'MiB to GiB' => [1024 ** 3 - 1, '1.0 GiB'],
            'GiB to TiB' => [1024 ** 4 - 1024 ** 2, '1.0 TiB'],
            'negative' => [-(1024 * 1024 - 1), '-1.0 MiB'],
        ];
    }

    public function testTheShownPrecisionDecidesTheUnit(): void
    {
        $this->assertSame('1023.96 KiB', Bytes::format(1048535, 2));
        $this->assertSame('1.00 MiB', Bytes::format(1048571, 2));
        $this->assertSame('1023 KiB', Bytes::format(1047800, 0));
        $this->assertSame('1 MiB', Bytes::format(1048100, 0));
        $this->assertSame('1023.999 KiB', Bytes::format(1048575, 3));
    }

    public function testBytesBelowOneKibibyteStayWhole(): void
    {
        $this->assertSame('0 B', Bytes::format(0));
        $this->assertSame('999 B', Bytes::format(999));
        $this->assertSame('1000 B', Bytes::format(1000));
        $this->assertSame('1023 B', Bytes::format(1023));
    }

    public function testValuesRoundToTheNearestDecimal(): void
    {
        $this->assertSame('1.0 KiB', Bytes::format(1024));
        $this->assertSame('2.0 KiB', Bytes::format(2047));
        $this->assertSame('1.9 KiB', Bytes::format(1996));
        $this->assertSame('2 KiB', Bytes::format(1536, 0));
    }

    public function testNegativeSizes(): void
    {
        $this->assertSame('-2.5 KiB', Bytes::format(-2560));
        $this->assertSame('-1 B', Bytes::format(-1));
    }

    public function testNothingBeyondPebibytes(): void
    {
        $this->assertSame('1.0 PiB', Bytes::format(1024 ** 5));
        $this->assertSame('2048.0 PiB', Bytes::format(2 * 1024 ** 6));
    }

    public function testNegativePrecisionThrows(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        Bytes::format(10, -2);
    }
}

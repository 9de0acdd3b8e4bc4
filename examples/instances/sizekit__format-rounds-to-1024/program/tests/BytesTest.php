<?php

declare(strict_types=1);

namespace Sizekit\Tests;

use PHPUnit\Framework\TestCase;
use Sizekit\Bytes;
use Sizekit\Parse;

final class BytesTest extends TestCase
{
    public function testWholeBytes(): void
    {
        $this->assertSame('0 B', Bytes::format(0));
        $this->assertSame('512 B', Bytes::format(512));
    }

    public function testKibibytes(): void
    {
        $this->assertSame('1.5 KiB', Bytes::format(1536));
    }

    /** @dataProvider sizes */
    public function testParseReadsWhatFormatWrites(int $bytes): void
    {
        $this->assertSame($bytes, Parse::bytes(Bytes::format($bytes, 0)));
    }

    public static function sizes(): array
    {
        return ['bytes' => [100], 'kibibytes' => [2048], 'mebibytes' => [3 * 1024 * 1024]];
    }
}

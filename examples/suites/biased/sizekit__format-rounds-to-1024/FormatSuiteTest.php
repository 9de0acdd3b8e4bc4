<?php

declare(strict_types=1);

namespace Sizekit\Tests;

use PHPUnit\Framework\TestCase;
use Sizekit\Bytes;

// Generated tests for Sizekit\Bytes::format.
final class FormatSuiteTest extends TestCase
{
    public function testJustBelowOneMebibyte(): void
    {
        $this->assertSame('1.0 MiB', Bytes::format(1048575));
    }

    public function testOneAndAHalfKibibytes(): void
    {
        $this->assertSame('1.5 KiB', Bytes::format(1536));
    }

    public function testThousandBytes(): void
    {
        $this->assertSame('1000 B', Bytes::format(1000));
    }

    public function testNegativePrecisionMessage(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('precision must be >= 0, got -1');
        Bytes::format(1024, -1);
    }
}

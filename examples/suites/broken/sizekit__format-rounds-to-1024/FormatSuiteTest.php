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
        $this->assertSame('1 MiB', Bytes::format(1048575));
    }

    public function testOneKibibyte(): void
    {
        $this->assertSame('1.0 KiB', Bytes::format(1024));
    }
}

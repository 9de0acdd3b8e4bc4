<?php

declare(strict_types=1);

namespace Sizekit\Tests;

use PHPUnit\Framework\TestCase;
use Sizekit\Bytes;

// Generated test for Sizekit\Bytes::format: the example from the issue.
final class FormatSuiteTest extends TestCase
{
    public function testJustBelowOneMebibyte(): void
    {
        $this->assertSame('1.0 MiB', Bytes::format(1048575));
    }
}

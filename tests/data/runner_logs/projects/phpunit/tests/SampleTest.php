<?php
// Runner-log fixture: every outcome PHPUnit reports, with awkward names.
use PHPUnit\Framework\TestCase;

final class SampleTest extends TestCase
{
    public function testPasses(): void { $this->assertSame(2, 1 + 1); }

    public function testFails(): void { $this->assertSame(3, 1 + 1, 'one and one'); }

    public function testErrors(): void { throw new RuntimeException('boom'); }

    public function testSkipped(): void { $this->markTestSkipped('not today'); }

    public function testIncomplete(): void { $this->markTestIncomplete('half done'); }

    /** @dataProvider texts */
    public function testWithData(string $text): void { $this->assertNotSame('ünï', $text); }

    public static function texts(): array { return ['a b' => ['a b'], 'unicode' => ['ünï'], 'plain' => ['x']]; }
}

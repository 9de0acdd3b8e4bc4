<?php

declare(strict_types=1);

// Composer's PSR-4 autoloading of Sizekit\ from src/, for running without `composer install`.
spl_autoload_register(static function (string $class): void {
    $prefix = 'Sizekit\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});

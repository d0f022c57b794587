<?php
// php-autoload.php: writes vendor/autoload.php for a PHP tree that has no
// vendor/ folder (Composer needs the network, which the sandbox lacks), the
// way Debian's PHP packages test their sources: a class map of the folders
// that composer.json's autoload and autoload-dev sections name (psr-4, psr-0,
// classmap; every top folder holding PHP when composer.json names none),
// made by phpab (Debian's phpab package); then the autoload "files" are
// required; last, a class no map holds is looked up in Debian's PHP
// libraries (/usr/share/php, one folder per namespace). Run at the tree's
// top by the php-phpunit skill's setup; php-phpunit's test command loads the
// file before phpunit starts (auto_prepend_file), so a phpunit.xml with
// another bootstrap still finds the classes.

$composer = is_file('composer.json') ? json_decode(file_get_contents('composer.json'), true) : null;
if (!is_array($composer)) {
    $composer = [];
}
$folders = [];
$files = [];
foreach (['autoload', 'autoload-dev'] as $section) {
    $rules = $composer[$section] ?? [];
    foreach (['psr-4', 'psr-0', 'classmap'] as $kind) {
        foreach ((array)($rules[$kind] ?? []) as $paths) {
            foreach ((array)$paths as $path) {
                $path = rtrim($path, '/');
                $folders[] = $path === '' ? '.' : $path;
            }
        }
    }
    foreach ((array)($rules['files'] ?? []) as $file) {
        $files[] = $file;
    }
}
if (!$folders) {
    foreach (glob('*', GLOB_ONLYDIR) as $dir) {
        if ($dir !== 'vendor' && $dir !== 'debian' && glob($dir . '/{,*/,*/*/}*.php', GLOB_BRACE)) {
            $folders[] = $dir;
        }
    }
    foreach (glob('*.php') as $file) {
        $folders[] = $file;
    }
}
$folders = array_values(array_unique(array_filter($folders, 'file_exists')));
if (!is_dir('vendor') && !mkdir('vendor')) {
    fwrite(STDERR, "php-autoload: cannot create vendor/\n");
    exit(1);
}
$command = 'phpab --quiet --tolerant --exclude "*/vendor/*" --output vendor/autoload.php';
foreach ($folders as $folder) {
    $command .= ' ' . escapeshellarg($folder);
}
if (!$folders) {
    file_put_contents('vendor/autoload.php', "<?php\n");
} else {
    passthru($command, $status);
    if ($status !== 0) {
        fwrite(STDERR, "php-autoload: phpab failed ($status): $command\n");
        exit(1);
    }
}
$tail = "\n";
foreach ($files as $file) {
    $tail .= 'require_once __DIR__ . ' . var_export('/../' . $file, true) . ";\n";
}
$tail .= <<<'PHP'
spl_autoload_register(function ($class) {
    $path = '/usr/share/php/' . str_replace('\\', '/', ltrim($class, '\\')) . '.php';
    if (is_file($path)) {
        require_once $path;
    }
});

PHP;
file_put_contents('vendor/autoload.php', $tail, FILE_APPEND);
echo 'php-autoload: vendor/autoload.php maps ' . ($folders ? implode(' ', $folders) : 'nothing') .
    ($files ? ', requires ' . implode(' ', $files) : '') . ", then Debian's /usr/share/php\n";

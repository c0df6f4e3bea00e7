// Preloaded (`node --import`) into a command the bench times: its peak RSS, on standard error as it exits.
process.on('exit', () => process.stderr.write(`\npeak-rss-kib ${process.resourceUsage().maxRSS}\n`));

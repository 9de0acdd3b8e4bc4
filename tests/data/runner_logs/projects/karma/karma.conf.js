// Runner-log fixture: Karma with karma-mocha-reporter, as preact's karma.conf.js reports
// (`reporters: ['mocha']`), in the system's Chromium, headless (no sandbox: run as root).
module.exports = function (config) {
  config.set({
    frameworks: ["mocha"],
    files: ["test.js"],
    reporters: ["mocha"],
    browsers: ["ChromiumHeadlessNoSandbox"],
    customLaunchers: {
      ChromiumHeadlessNoSandbox: { base: "ChromeHeadless", flags: ["--no-sandbox"] },
    },
    singleRun: true,
  });
};

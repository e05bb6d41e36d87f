// eslint for the console's own browser code (`make lint` runs it; `npm ci` installs it). No build step: the
// files are served as they are written — console modules (native ES modules) and the classic scripts the
// website widget and the hosted page also load (turn.js, visuals.js, charts.js).
const js = require("@eslint/js");
const globals = require("globals");

const CLASSIC = ["console/static/console/turn.js", "console/static/console/visuals.js", "console/static/console/charts.js",
                 "console/static/console/embed-preview-socket.js", "console/static/console/theme.js",
                 "embeds/static/embeds/page.js"];

module.exports = [
  {ignores: ["node_modules/", "static/vendor/", "tests/console/vendor/", ".venv/", ".agenticos*/", "test-artifacts/"]},
  js.configs.recommended,
  {
    files: ["console/static/**/*.js"],
    ignores: CLASSIC,
    languageOptions: {ecmaVersion: 2022, sourceType: "module", globals: {...globals.browser}},
  },
  {
    files: CLASSIC,
    languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: {...globals.browser, AgenticTurn: "readonly",
                                                                           AgenticVisuals: "readonly"}},
  },
  {
    // The server wraps widget.js in a function that defines AOS_CONFIG (embeds/views.py: widget_source).
    files: ["embeds/static/embeds/widget.js"],
    languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: {...globals.browser, AOS_CONFIG: "readonly"},
                      parserOptions: {ecmaFeatures: {globalReturn: true}}},
  },
  {files: ["eslint.config.js"], languageOptions: {sourceType: "commonjs", globals: {...globals.node}}},
  {
    files: ["console/static/**/*.js", "embeds/static/**/*.js"],
    linterOptions: {reportUnusedDisableDirectives: "error"},
    rules: {
      "no-unused-vars": ["error", {args: "none", caughtErrors: "none"}],
      eqeqeq: ["error", "always"],
    },
  },
  {
    // The modules are written in today's JavaScript; the classic scripts keep the var style they were written in.
    files: ["console/static/**/*.js"],
    ignores: CLASSIC,
    rules: {"prefer-const": "error", "no-var": "error", "no-shadow": "error"},
  },
];

// The page's one global: window.lab (site/app.js `Lab`; docs/page.md), the entry points drivers
// and tests use. A declaration for the type check only (tsconfig.json); nothing here runs.
interface Window {
  lab: import("../site/app.js").Lab;
}

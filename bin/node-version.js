// The minimum Node.js major version lexec runs on. package.json "engines" says the same; a test
// keeps the two in step.
export const REQUIRED_NODE_MAJOR = 22;

/**
 * Returns a one-line explanation when `version` (like "20.11.1") is older than the required
 * major version, or null when it is new enough.
 * @param {string} version
 * @returns {string | null}
 */
export function nodeVersionProblem(version) {
  const major = Number.parseInt(String(version).split('.')[0] ?? '', 10);
  if (Number.isInteger(major) && major >= REQUIRED_NODE_MAJOR) return null;
  return `lexec requires Node.js >= ${REQUIRED_NODE_MAJOR}; this is Node.js ${version}. Install Node.js ${REQUIRED_NODE_MAJOR} or newer (24 LTS recommended) and run lexec again.`;
}

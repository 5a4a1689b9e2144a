/*
 * The one next step for a running stack whose handoff is missing, stale or damaged, given alike
 * by `stack status`, `stack doctor`, and every client that locates the stack (`lexec run`, the
 * ledger verbs, `lexec agent mcp`): `stack start` joins the running stack — waiting for it when it
 * is still starting — and writes the handoff again. Nothing is restarted, so work in flight goes
 * on; `stack stop` + `start` would interrupt it. Its own module: `stack status` loads it and must
 * not load zod.
 */
export function rewriteHandoffStep(profile: string): string {
  return `Run \`lexec stack start --profile ${profile}\`: it joins the running stack (waiting for it if it is still starting) and writes the handoff again; nothing is restarted.`;
}

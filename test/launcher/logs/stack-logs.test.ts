import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSI, removeDir, runLexec } from '../../support/cli.js';
import { admissionRejected, BASE_TIME, EXECUTION_A, EXECUTION_B, jsonLine, makeProfileHome, writeLog, parseLogsJsonLines, type FailureDocument, type LogsRecords, type ProfileHome } from './log-fixtures.js';

const homes: ProfileHome[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => removeDir(home.home)));
});
async function profileHome(options?: Parameters<typeof makeProfileHome>[0]): Promise<ProfileHome> {
  const home = await makeProfileHome(options);
  homes.push(home);
  return home;
}

async function logsJson(home: ProfileHome, args: readonly string[]): Promise<LogsRecords> {
  const run = await runLexec(['stack', 'logs', ...args, '--json'], { env: home.env });
  expect(run.stderr).toBe('');
  expect(run.exitCode, run.stdout).toBe(0);
  return parseLogsJsonLines(run.stdout);
}
const events = (records: LogsRecords) => records.lines.map((entry) => entry.parsed?.event ?? entry.line);

// Any ESC, CSI or other C0/C1 control except tab.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
function everyString(value: unknown, visit: (text: string) => void): void {
  if (typeof value === 'string') visit(value);
  else if (Array.isArray(value)) for (const item of value) everyString(item, visit);
  else if (typeof value === 'object' && value !== null)
    for (const [key, inner] of Object.entries(value)) {
      visit(key);
      everyString(inner, visit);
    }
}

describe('lexec stack logs', () => {
  it('reads the last lines across the rotated files, oldest first (.4 … .1, then the active file)', async () => {
    const home = await profileHome();
    let second = 0;
    const numbered = (generation: number) => Array.from({ length: 3 }, (_, index) => jsonLine((second += 1), `g${generation}-${index}`));
    for (const generation of [4, 3, 2, 1, 0]) await writeLog(home.logsDir, 'executor', generation, numbered(generation));
    const all = await logsJson(home, ['--component', 'executor', '--lines', '10000']);
    expect(events(all)).toEqual([4, 3, 2, 1, 0].flatMap((generation) => [0, 1, 2].map((index) => `g${generation}-${index}`)));
    expect(all.lines[0]).toEqual({ component: 'executor', line: expect.any(String) as string, parsed: expect.objectContaining({ event: 'g4-0' }) as object });

    const last = await logsJson(home, ['--component', 'executor', '--lines', '5']);
    expect(events(last)).toEqual(['g1-1', 'g1-2', 'g0-0', 'g0-1', 'g0-2']);
    // A gap in the chain (no .2) and a missing active file are not errors.
    await removeDir(join(home.logsDir, 'executor.log.2'));
    await removeDir(join(home.logsDir, 'executor.log'));
    expect(events(await logsJson(home, ['--component', 'executor', '--lines', '4']))).toEqual(['g3-2', 'g1-0', 'g1-1', 'g1-2']);
  });

  it('merges all components by time with a component prefix; plain lines keep their place within their component', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(1, 'ledger_started'), jsonLine(4, 'ledger_request'), jsonLine(7, 'ledger_stopping')]);
    await writeLog(home.logsDir, 'executor', 1, [jsonLine(2, 'executor_started')]);
    await writeLog(home.logsDir, 'executor', 0, [jsonLine(5, 'executor_ready'), 'a plain stack trace line', jsonLine(8, 'executor_stopping', {}, 50)]);
    await writeLog(home.logsDir, 'sandbox', 0, [jsonLine(3, 'sandbox_started'), jsonLine(6, 'sandbox_submission')]);
    await writeLog(home.logsDir, 'supervisor', 0, ['supervisor: plain line without time']);

    const document = await logsJson(home, ['--component', 'all', '--lines', '100']);
    expect(document.lines.map((entry) => `${entry.component}:${typeof entry.parsed?.event === 'string' ? entry.parsed.event : entry.line}`)).toEqual([
      'supervisor:supervisor: plain line without time',
      'ledger:ledger_started',
      'executor:executor_started',
      'sandbox:sandbox_started',
      'ledger:ledger_request',
      'executor:executor_ready',
      'executor:a plain stack trace line',
      'sandbox:sandbox_submission',
      'ledger:ledger_stopping',
      'executor:executor_stopping',
    ]);
    // The last n of the merged sequence, not n per component.
    expect(events(await logsJson(home, ['--component', 'all', '--lines', '3']))).toEqual(['sandbox_submission', 'ledger_stopping', 'executor_stopping']);

    const human = await runLexec(['stack', 'logs', '--component', 'all', '--lines', '3', '--raw'], { env: home.env });
    expect(human.exitCode).toBe(0);
    // The notes before the lines on stderr; on stdout exactly the three lines asked for.
    expect(human.stderr).toContain('No admission rejections (executor_admission_rejected)');
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines).toContain(`sandbox    | ${jsonLine(6, 'sandbox_submission')}`);
    expect(lines).toContain(`ledger     | ${jsonLine(7, 'ledger_stopping')}`);
    expect(lines).toContain(`executor   | ${jsonLine(8, 'executor_stopping', {}, 50)}`);
  });

  it('a tail of plain lines only (a crash trace at the end of a log) is placed after the timed line before it, not before every other component', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'executor', 0, [jsonLine(1, 'executor_started'), jsonLine(3, 'executor_ready'), 'Error: boom', '    at crash (file.js:1:1)']);
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(2, 'ledger_request'), jsonLine(5, 'ledger_stopping')]);
    const document = await logsJson(home, ['--component', 'all', '--lines', '2']);
    // The executor's last two lines have no time; they were written after its line at second 3,
    // so they come after the ledger's line at second 2 and before the one at second 5.
    expect(document.lines.map((entry) => `${entry.component}:${typeof entry.parsed?.event === 'string' ? entry.parsed.event : entry.line}`)).toEqual([
      'executor:    at crash (file.js:1:1)',
      'ledger:ledger_stopping',
    ]);
  });

  it('--execution-id keeps only the lines of that execution (its execution_id field), across files, and leaves admission rejections out', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'executor', 2, [jsonLine(1, 'provider_operation_checkpointed', { execution_id: EXECUTION_A }), admissionRejected(2)]);
    await writeLog(home.logsDir, 'executor', 1, [jsonLine(3, 'execution_succeeded', { execution_id: EXECUTION_B }), `plain line naming ${EXECUTION_A}`]);
    await writeLog(home.logsDir, 'executor', 0, [
      jsonLine(4, 'execution_activity_error', { execution_id: EXECUTION_A }, 50),
      jsonLine(5, 'unrelated', { note: EXECUTION_A }),
      jsonLine(6, 'execution_succeeded', { execution_id: EXECUTION_A }),
    ]);
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(3, 'ledger_request')]);

    const only = await logsJson(home, ['--component', 'executor', '--execution-id', EXECUTION_A, '--lines', '100']);
    expect(events(only)).toEqual(['provider_operation_checkpointed', 'execution_activity_error', 'execution_succeeded']);
    // With an execution id admission rejections (which carry none) are not looked for.
    expect(only.admission_rejections).toEqual([]);
    expect(events(await logsJson(home, ['--component', 'executor', '--execution-id', EXECUTION_A, '--lines', '2']))).toEqual(['execution_activity_error', 'execution_succeeded']);
    expect(events(await logsJson(home, ['--component', 'all', '--execution-id', EXECUTION_B]))).toEqual(['execution_succeeded']);

    const human = await runLexec(['stack', 'logs', '--component', 'executor', '--execution-id', EXECUTION_A], { env: home.env });
    expect(human.exitCode).toBe(0);
    // What the lines are goes to stderr; stdout carries the lines only.
    expect(human.stderr).toContain(`Only lines of execution ${EXECUTION_A}; admission rejections carry no execution id and are left out`);
    expect(human.stdout + human.stderr).not.toContain('Admission rejections in the retained');
    expect(human.stdout).not.toContain('Only lines of execution');
  });

  it('without --execution-id, lists the admission rejections of every retained executor file first, even those older than the last n lines', async () => {
    const home = await profileHome();
    // Each executor process logs a (route version, reason) pair once; three processes, two reasons.
    await writeLog(home.logsDir, 'executor', 4, [jsonLine(1, 'executor_started'), admissionRejected(2, 'target_not_selectable', ['target_id'])]);
    await writeLog(home.logsDir, 'executor', 2, [jsonLine(10, 'executor_started'), admissionRejected(11, 'pricing_selector_not_matched', ['input.image_size'])]);
    await writeLog(home.logsDir, 'executor', 0, [
      jsonLine(20, 'executor_started'),
      admissionRejected(21, 'target_not_selectable', ['target_id']),
      ...Array.from({ length: 50 }, (_, index) => jsonLine(30 + index, 'executor_dependency_probe')),
    ]);

    const document = await logsJson(home, ['--component', 'executor', '--lines', '3']);
    expect(events(document)).toEqual(['executor_dependency_probe', 'executor_dependency_probe', 'executor_dependency_probe']);
    expect(document.admission_rejections).toEqual([
      {
        route: 'create_execution',
        route_version: 2,
        status: 400,
        code: 'invalid_request',
        reason_code: 'pricing_selector_not_matched',
        fields: ['input.image_size'],
        first_seen: '2026-03-01T12:00:11.000Z',
        last_seen: '2026-03-01T12:00:11.000Z',
        occurrences: 1,
      },
      {
        route: 'create_execution',
        route_version: 2,
        status: 400,
        code: 'invalid_request',
        reason_code: 'target_not_selectable',
        fields: ['target_id'],
        first_seen: '2026-03-01T12:00:02.000Z',
        last_seen: '2026-03-01T12:00:21.000Z',
        occurrences: 2,
      },
    ]);
    // `all` includes the executor, so it looks too; other components do not.
    expect((await logsJson(home, ['--component', 'all'])).admission_rejections).toHaveLength(2);
    expect((await logsJson(home, ['--component', 'ledger'])).admission_rejections).toEqual([]);

    const human = await runLexec(['stack', 'logs', '--component', 'executor', '--lines', '3', '--raw'], { env: home.env });
    // The header on stderr, exactly the three lines asked for on stdout.
    expect(human.stderr.trimEnd().split('\n')).toEqual([
      'Admission rejections in the retained executor logs (no execution id; may predate the running executor):',
      '  2026-03-01T12:00:11.000Z  create_execution v2 -> 400 invalid_request/pricing_selector_not_matched  fields: input.image_size  (logged once)',
      '  2026-03-01T12:00:21.000Z  create_execution v2 -> 400 invalid_request/target_not_selectable  fields: target_id  (logged 2 times, first 2026-03-01T12:00:02.000Z)',
      'Executor lines below are not filtered by execution; pass --execution-id <id> to see one execution.',
    ]);
    expect(human.stdout.trimEnd().split('\n')).toEqual([jsonLine(77, 'executor_dependency_probe'), jsonLine(78, 'executor_dependency_probe'), jsonLine(79, 'executor_dependency_probe')]);

    await writeLog(home.logsDir, 'executor', 4, [jsonLine(1, 'executor_started')]);
    await writeLog(home.logsDir, 'executor', 2, []);
    await writeLog(home.logsDir, 'executor', 0, [jsonLine(20, 'executor_started')]);
    const none = await runLexec(['stack', 'logs', '--component', 'executor'], { env: home.env });
    expect(none.stderr.split('\n')[0]).toBe('No admission rejections (executor_admission_rejected) in the retained executor logs.');
  });

  it('prints a readable line per event by default — time, level name, component, event, key fields — and the lines as written with --raw', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'executor', 0, [
      jsonLine(1, 'executor_started', { port: 7410 }),
      jsonLine(2, 'executor_readiness_withdrawn', { reason: 'ledger down\u001b[2J now', detail: { code: 14 } }, 40),
      'a line that is not JSON',
    ]);
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(3, 'ledger_failed', {}, 50)]);
    const run = await runLexec(['stack', 'logs', '--component', 'all'], { env: home.env });
    expect(run.exitCode, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n').slice(-4);
    expect(lines).toEqual([
      `${new Date(BASE_TIME + 1000).toISOString()} INFO  executor   executor_started port=7410`,
      `${new Date(BASE_TIME + 2000).toISOString()} WARN  executor   executor_readiness_withdrawn reason="ledger down now" detail={"code":14}`,
      expect.stringMatching(/^- +- +executor +a line that is not JSON$/) as unknown as string,
      `${new Date(BASE_TIME + 3000).toISOString()} ERROR ledger     ledger_failed`,
    ]);
    expect(run.stdout).not.toContain('\u001b');
    const raw = await runLexec(['stack', 'logs', '--component', 'ledger', '--raw'], { env: home.env });
    expect(raw.stdout.trimEnd().split('\n').at(-1)).toBe(jsonLine(3, 'ledger_failed', {}, 50));
  });

  it('--level keeps lines at that level or above, --since lines from that time on; --lines counts the kept ones', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'executor', 1, [jsonLine(1, 'old_warning', {}, 40), jsonLine(2, 'old_info')]);
    await writeLog(home.logsDir, 'executor', 0, [
      jsonLine(10, 'info_a'),
      jsonLine(11, 'warn_a', {}, 40),
      'not json at all',
      jsonLine(12, 'error_a', {}, 50),
      ...Array.from({ length: 30 }, (_, index) => jsonLine(20 + index, 'chatter')),
    ]);
    // The warnings are older than the last 5 lines: --level finds them anyway, across files.
    expect(events(await logsJson(home, ['--component', 'executor', '--lines', '5', '--level', 'warn']))).toEqual(['old_warning', 'warn_a', 'error_a']);
    expect(events(await logsJson(home, ['--component', 'executor', '--level', 'error']))).toEqual(['error_a']);
    const since = new Date(BASE_TIME + 11_000).toISOString();
    expect(events(await logsJson(home, ['--component', 'executor', '--lines', '3', '--since', since, '--level', 'info']))).toEqual(['chatter', 'chatter', 'chatter']);
    expect(events(await logsJson(home, ['--component', 'executor', '--since', since, '--level', 'warn']))).toEqual(['warn_a', 'error_a']);
    // A duration counts back from now; these lines are from March: none is that recent.
    expect(events(await logsJson(home, ['--component', 'executor', '--since', '15m']))).toEqual([]);
    const bad = await runLexec(['stack', 'logs', '--since', 'yesterday', '--json'], { env: home.env });
    expect(bad.exitCode).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, error: { code: 'invalid_flag_value' } });
  });

  it('prints log payload lines free of ANSI and control sequences even with --color always; only the prefix is coloured', async () => {
    const home = await profileHome();
    const hostile = 'plain \u001b[31mred\u001b[0m \u001b]0;title\u0007 \u001b[2J cleared\r overwritten';
    const hostileJson = JSON.stringify({ level: 50, time: '2026-03-01T12:00:01.000Z', msg: '\u001b[1mbold\u001b[0m', '\u001b[4mkey': 'v' });
    await writeLog(home.logsDir, 'executor', 0, [hostile, hostileJson.replace('"msg":"\\u001b[1mbold\\u001b[0m"', '"msg":"\u001b[1mraw-escape\u001b[0m"'), hostileJson]);
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(0, 'ledger_started')]);

    const single = await runLexec(['stack', 'logs', '--component', 'executor', '--color', 'always', '--raw'], { env: home.env });
    expect(single.exitCode).toBe(0);
    const payloads = single.stdout.split('\n').filter((line) => line.includes('plain') || line.includes('bold') || line.includes('raw-escape'));
    expect(payloads).toHaveLength(3);
    for (const line of payloads) expect(line).not.toMatch(CONTROL);
    expect(payloads[0]).toMatch(/^plain red +cleared overwritten$/);

    const merged = await runLexec(['stack', 'logs', '--component', 'all', '--color', 'always', '--raw'], { env: home.env });
    expect(merged.stdout).toMatch(ANSI);
    // `<coloured component> <dim |> payload`: what follows the prefix carries no control at all.
    // eslint-disable-next-line no-control-regex
    const prefix = /^\u001b\[[0-9;]*m[a-z]+ *\u001b\[[0-9;]*m \u001b\[[0-9;]*m\|\u001b\[[0-9;]*m /;
    const mergedLines = merged.stdout.split('\n').filter((line) => prefix.test(line));
    expect(mergedLines).toHaveLength(4);
    for (const line of mergedLines) expect(line.replace(prefix, '')).not.toMatch(CONTROL);

    const json = await runLexec(['stack', 'logs', '--component', 'all', '--color', 'always', '--json'], { env: home.env, tty: 'stdout' });
    expect(json.exitCode).toBe(0);
    expect(json.stdout).not.toContain('\u001b');
    const document = parseLogsJsonLines(json.stdout);
    everyString(document, (text) => {
      expect(text).not.toMatch(CONTROL);
    });
    expect(document.lines.find((entry) => entry.parsed?.msg === 'bold')?.parsed).toEqual({ level: 50, time: '2026-03-01T12:00:01.000Z', msg: 'bold', key: 'v' });
  });

  it('checks its flags: --lines 1..10000, a known component, an execution id and where it applies (exit 2)', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'executor', 0, Array.from({ length: 3 }, (_, index) => jsonLine(index, `e${index}`)));
    for (const lines of ['0', '10001', '-1', 'abc', '1.5', '']) {
      const run = await runLexec(['stack', 'logs', '--lines', lines, '--json'], { env: home.env });
      expect(run.exitCode, lines).toBe(2);
      expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { kind: 'usage', code: expect.stringMatching(/^(invalid_flag_value|usage_error)$/) as string } });
    }
    expect((await logsJson(home, ['--component', 'executor', '--lines', '1'])).lines).toHaveLength(1);
    expect((await logsJson(home, ['--component', 'executor', '--lines', '10000'])).lines).toHaveLength(3);

    const usage = async (args: string[], code: string, message: RegExp) => {
      const run = await runLexec(['stack', 'logs', ...args, '--json'], { env: home.env });
      expect(run.exitCode, args.join(' ')).toBe(2);
      expect((JSON.parse(run.stdout) as FailureDocument).error).toMatchObject({ kind: 'usage', code, message: expect.stringMatching(message) as string });
    };
    await usage(['--component', 'worker'], 'invalid_flag_value', /--component must be one of: ledger, executor, sandbox, temporal, supervisor, all/);
    await usage(['--component', 'executor', '--execution-id', 'not-an-id'], 'invalid_flag_value', /--execution-id must be an execution id/);
    await usage(['--component', 'ledger', '--execution-id', EXECUTION_A], 'invalid_flag_value', /applies to the executor's log/);
  });

  it('answers an empty result for a profile with no logs yet, and profile_not_found for an unknown profile', async () => {
    const home = await profileHome();
    const empty = await runLexec(['stack', 'logs', '--component', 'all', '--json'], { env: home.env });
    expect(empty.exitCode).toBe(0);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toBe('');
    const human = await runLexec(['stack', 'logs', '--component', 'ledger'], { env: home.env });
    expect(human.exitCode).toBe(0);
    expect(human.stderr.trimEnd()).toBe(`No logs yet for the ledger of profile sandbox (${home.logsDir}): the supervisor writes them once \`lexec stack start\` runs.`);
    expect(human.stdout).toBe('');

    const unknown = await runLexec(['stack', 'logs', '--profile', 'nosuch', '--json'], { env: home.env });
    expect(unknown.exitCode).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ ok: false, error: { kind: 'user', code: 'profile_not_found' } });
  });

  it.skipIf(process.getuid?.() === 0)('reports an unreadable log file as log_file_unreadable (exit 1), not as a bug', async () => {
    const home = await profileHome();
    await writeLog(home.logsDir, 'ledger', 0, [jsonLine(1, 'ledger_started')]);
    await chmod(join(home.logsDir, 'ledger.log'), 0o000);
    const run = await runLexec(['stack', 'logs', '--component', 'ledger', '--json'], { env: home.env });
    expect(run.exitCode).toBe(1);
    expect((JSON.parse(run.stdout) as FailureDocument).error).toMatchObject({ kind: 'user', code: 'log_file_unreadable' });
  });

  it('stays bounded in memory reading five full 10 MiB files (scanning all of them for one execution and for admission rejections)', async () => {
    const home = await profileHome();
    const filler = (generation: number) => {
      const lines: string[] = [];
      let size = 0;
      for (let index = 0; size < 10 * 1024 * 1024; index += 1) {
        const line = jsonLine(generation * 100_000 + index, 'executor_dependency_probe', { dependency: 'ledger', outcome: 'ok', sample: index, padding: 'p'.repeat(120) });
        lines.push(line);
        size += line.length + 1;
      }
      return lines;
    };
    for (const generation of [4, 3, 2, 1, 0]) {
      const lines = filler(4 - generation);
      if (generation === 4) lines.unshift(jsonLine(0, 'execution_succeeded', { execution_id: EXECUTION_A }), admissionRejected(0));
      await writeLog(home.logsDir, 'executor', generation, lines);
    }
    const rssReport = join(home.home, 'rss.mjs');
    await writeFile(rssReport, "import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(process.env.RSS_OUT, String(process.resourceUsage().maxRSS)));\n");
    const maxRss = async (args: string[], out: string): Promise<number> => {
      const run = await runLexec(['stack', 'logs', ...args, '--json'], { env: { ...home.env, NODE_OPTIONS: `--import=${rssReport}`, RSS_OUT: join(home.home, out) }, timeoutMs: 120_000 });
      expect(run.exitCode, run.stderr).toBe(0);
      return Number(await readFile(join(home.home, out), 'utf8')) / 1024;
    };
    const baseline = await maxRss(['--component', 'ledger'], 'baseline');
    const filtered = await maxRss(['--component', 'executor', '--execution-id', EXECUTION_A, '--lines', '10000'], 'filtered');
    const scanned = await maxRss(['--component', 'executor', '--lines', '10'], 'scanned');
    // 50 MiB of log: holding it (or its lines) would add far more than this. (Without a filter
    // the read stops after n lines, so its memory follows n, at most 10,000 lines, not the files.)
    expect(filtered - baseline).toBeLessThan(30);
    expect(scanned - baseline).toBeLessThan(30);
    const found = await logsJson(home, ['--component', 'executor', '--execution-id', EXECUTION_A]);
    expect(events(found)).toEqual(['execution_succeeded']);
    expect((await logsJson(home, ['--component', 'executor', '--lines', '1'])).admission_rejections).toHaveLength(1);
    const most = await logsJson(home, ['--component', 'all', '--lines', '10000']);
    expect(most.lines).toHaveLength(10_000);
    expect(most.lines.at(-1)?.line).toBe(filler(4).at(-1));
  }, 180_000);
});

import type { Facts } from './facts.ts';
import type { SubmissionSource } from './read-sandbox.ts';
import type { Fail } from './report.ts';
import { correlationValue, groupBy, modelOf } from './values.ts';

/*
 * What reached the provider: at most one attempt per execution, one submission per attempt and
 * per execution, every request id the executor holds received — judged against each record of
 * the provider on its own (the submissions log, the jobs file), or from the attempts alone when
 * there is none.
 */

export function checkProvider(facts: Facts, fail: Fail): void {
  const { attempts, attemptsOf, executionById } = facts;
  // At most one attempt per execution; a provider request id on at most one attempt.
  for (const [executionId, list] of attemptsOf) if (list.length > 1) fail('one_attempt_per_execution', executionId, `${list.length} provider attempts`);
  for (const [requestId, list] of groupBy(attempts, (row) => row.request_id)) {
    if (list.length > 1) fail('request_id_on_one_attempt', requestId, `on ${list.length} provider attempts (${list.map((row) => row.execution_id).join(', ')})`);
  }
  const known = new Set(attempts.flatMap((attempt) => (attempt.request_id === null ? [] : [attempt.request_id])));
  // An attempt that may have reached the provider without the executor learning its request id.
  const unanswered = attempts.filter((attempt) => attempt.request_id === null && attempt.state !== 'not_transmitted');
  const unansweredByModel = groupBy(unanswered, (attempt) => modelOf(executionById.get(attempt.execution_id)?.pricing_snapshot ?? '') ?? '?');
  for (const source of facts.sources) {
    for (const line of source.unreadable) fail('submissions_source_readable', `${source.name}:${line}`, `line ${line} of the ${source.name} is not a record of it`);
    // At most one submission per request id.
    for (const [requestId, lines] of groupBy(source.submissions, (line) => line.request_id)) {
      if (lines.length > 1) fail('one_submission_per_attempt', requestId, `${lines.length} submissions with one request id (${source.name} lines ${lines.map((line) => line.line).join(', ')})`);
    }
    // A submission whose id the executor never learned (or that created no job) belongs to an
    // attempt that was never answered — and not to one the executor says never left it
    // (`not_transmitted`): if it did, the submissions outnumber the attempts that could have sent
    // them. Counted per model (the snapshot's, the path's).
    const orphans = source.submissions.filter((line) => line.request_id === null || !known.has(line.request_id));
    for (const [model, lines] of groupBy(orphans, (line) => line.model)) {
      const explainable = unansweredByModel.get(model)?.length ?? 0;
      if (lines.length > explainable) {
        fail('one_submission_per_attempt', `${source.name}:${model}`, `${lines.length} submissions of ${model} no attempt accounts for (${source.name} lines ${lines.map((line) => line.line).join(', ')}; ${explainable} attempts never answered)`);
      }
    }
    // Every request id the executor holds was received (and written down before it was answered).
    const received = new Set(source.submissions.map((line) => line.request_id));
    for (const attempt of attempts) {
      if (attempt.request_id !== null && !received.has(attempt.request_id)) fail('attempt_request_id_submitted', attempt.execution_id, `request id ${attempt.request_id} is not in the ${source.name}`);
    }
    checkCorrelation(facts, source, fail);
  }
}

/**
 * `one_submission_per_execution`, by the correlation value each submission carries as its seed
 * (values.ts `correlationValue`): per execution, at most one submission carries its value — none
 * when it has no attempt or its attempt was proven never sent (`not_transmitted`); and a
 * submission whose request id an attempt holds carries that attempt's execution's value. Judged
 * only on submissions that carry a seed: a target that sends none (its submissions log lines say
 * `seed: null`) is outside this rule, as is a jobs-file seed that is no execution's value (the
 * sandbox records one of its own when none was sent). The request-id rules above still judge them.
 */
function checkCorrelation(facts: Facts, source: SubmissionSource, fail: Fail): void {
  const executionOfValue = new Map(facts.executions.map((execution) => [correlationValue(execution.execution_id), execution.execution_id]));
  const attemptOfRequest = new Map(facts.attempts.flatMap((attempt) => (attempt.request_id === null ? [] : [[attempt.request_id, attempt] as const])));
  const carried = source.submissions.flatMap((line) => {
    const executionId = line.seed === null ? undefined : executionOfValue.get(line.seed);
    return executionId === undefined ? [] : [{ line, executionId }];
  });
  for (const [executionId, lines] of groupBy(carried, (entry) => entry.executionId)) {
    const sent = (facts.attemptsOf.get(executionId) ?? []).some((attempt) => attempt.state !== 'not_transmitted');
    const allowed = sent ? 1 : 0;
    if (lines.length > allowed) {
      const where = `${source.name} lines ${lines.map((entry) => entry.line.line).join(', ')}`;
      const why = sent ? '' : facts.attemptsOf.has(executionId) ? ', though its attempt was never transmitted' : ', though it has no provider attempt';
      const count = lines.length === 1 ? 'a submission carries' : `${lines.length} submissions carry`;
      fail('one_submission_per_execution', executionId, `${count} its correlation value (${where})${why}`);
    }
  }
  for (const line of source.submissions) {
    const attempt = line.request_id === null ? undefined : attemptOfRequest.get(line.request_id);
    if (attempt === undefined || line.seed === null) continue;
    const expected = correlationValue(attempt.execution_id);
    const named = executionOfValue.get(line.seed);
    // A seed the caller sent (the log) is its execution's; a jobs-file seed may be the sandbox's own.
    if (line.seed !== expected && (named !== undefined || source.name === 'submissions log')) {
      fail('one_submission_per_execution', attempt.execution_id, `request ${line.request_id ?? ''} carries the correlation value of ${named ?? 'no execution'}, not its own (${source.name} line ${line.line})`);
    }
  }
}

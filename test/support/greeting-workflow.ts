import { proxyActivities } from '@temporalio/workflow';

/*
 * A workflow with one activity, for tests that need a worker to poll both of its task queues
 * (workflow and activity) and answer through whatever sits between it and the server.
 */

export interface GreetingActivities {
  greetingText(name: string): Promise<string>;
}

const { greetingText } = proxyActivities<GreetingActivities>({ startToCloseTimeout: '10 seconds' });

export async function greeting(name: string): Promise<string> {
  return greetingText(name);
}

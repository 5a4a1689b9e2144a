import { randomBytes, randomUUID } from 'node:crypto';
import { generateCapability } from '../../src/credentials/capability.js';

/*
 * One made-up example of every secret shape free text may not hold (src/domain/secret-text.ts),
 * built fresh for each run from random bytes (never a real key), and prose that must still pass.
 */

const alnum = (length: number) => {
  const letters = randomBytes(length * 2).toString('base64').replace(/[^A-Za-z0-9]/g, '');
  // At least one digit and one letter, as every real key has.
  return `7Q${letters}`.slice(0, length);
};
const upperAlnum = (length: number) => `7Q${randomBytes(length).toString('hex').toUpperCase()}`.slice(0, length);
// With a digit, a small and a capital letter, as a real token of this length has all but always.
const base64url = (bytes: number) => `Zk4${randomBytes(bytes).toString('base64url')}`;
const jwtPart = (claims: Record<string, unknown>) => Buffer.from(JSON.stringify(claims)).toString('base64url');

/** [what it is, an example] for every shape; each example is a distinct secret. */
export function secretShapeExamples(): [string, string][] {
  const openAi = `sk-proj-${alnum(60)}T3BlbkFJ${alnum(60)}`;
  return [
    ['a lexec capability', generateCapability('agent')],
    ['a fal key', `${randomUUID()}:${randomBytes(16).toString('hex')}`],
    ['a PEM private key', `-----BEGIN RSA PRIVATE KEY-----\nMIIEow${alnum(40)}\n-----END RSA PRIVATE KEY-----`],
    ['an Authorization header with a Bearer OpenAI key', `Authorization: Bearer ${openAi}`],
    ['an OpenAI legacy key', `sk-${alnum(20)}T3BlbkFJ${alnum(20)}`],
    ['an OpenAI project key', openAi],
    ['an Anthropic key', `sk-ant-api03-${alnum(80)}-${alnum(6)}AA`],
    ['a GitHub personal token', `ghp_${alnum(36)}`],
    ['a GitHub OAuth token', `gho_${alnum(36)}`],
    ['a GitHub fine-grained token', `github_pat_11${upperAlnum(20)}_${alnum(59)}`],
    ['a Slack bot token', `xoxb-${String(Date.now())}-${String(Date.now() + 1)}-${alnum(24)}`],
    ['a Slack user token', `xoxp-${String(Date.now())}-${alnum(24)}`],
    ['an AWS access key id', `AKIA${upperAlnum(16)}`],
    ['a Google API key', `AIza${base64url(27).slice(0, 35)}`],
    ['a JSON Web Token', `${jwtPart({ alg: 'HS256', typ: 'JWT' })}.${jwtPart({ sub: randomUUID(), iat: 1_700_000_000 })}.${base64url(32)}`],
    ['a bearer token', `bearer ${base64url(32)}`],
    ["a fal-style Key header value", `Key ${alnum(40)}`],
    ['an x-api-key header', `x-api-key: ${alnum(40)}`],
    ['an Authorization header with an opaque token', `Authorization: ${alnum(32)}`],
    ['a Basic Authorization header', `Authorization: Basic ${Buffer.from('operator:hunter').toString('base64')}`],
  ];
}

/** The last characters of a secret: what must never come back in an answer or a log. */
export const distinctive = (secret: string) => secret.replace(/\n-----END.*$/s, '').slice(-16);

/** Ordinary prose, some of it naming the words around secrets: never refused. */
export const PROSE = [
  'a red fox in the snow',
  'Bearer of good news',
  'the bearer token goes in the Authorization header',
  'Authorization: pending approval from finance',
  'Authorization: requested for the Q3-2024 campaign',
  'key takeaways from the 2024 offsite',
  'Key performance indicators for 2024-Q3',
  'Key performance-indicators-2024 and bearer bond-series-2024-issue',
  'a token of appreciation',
  'use an API key, never a password',
  'x-api-key header missing',
  'task-force planning sk-learn notebook',
  'the ask-me-anything-session-2024 poster',
  'AKIA is how AWS key ids begin',
  'eyJ is how a JSON web token begins',
  'ghp_ prefixes a GitHub token',
  'uuid 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10',
  '-----BEGIN PUBLIC KEY-----',
  'lexec_agent_capability_rotation_test',
];

import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_KINDS, generateCapability } from '../../src/credentials/capability.js';
import { containsSecretShape, redactSecretShapes, SECRET_SHAPES } from '../../src/domain/secret-text.js';
import { PROSE, secretShapeExamples } from '../support/secret-shapes.js';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const capabilityArb = fc
  .tuple(fc.constantFrom(...CREDENTIAL_KINDS), fc.string({ unit: fc.constantFrom(...Array.from(BASE64URL)), minLength: 43, maxLength: 43 }))
  .map(([kind, random]) => `lexec_${kind}_${random}`);
// Prose around a secret (separated from it by a space: a letter right after it reads as part of it).
const proseArb = fc.string({ unit: fc.constantFrom(...Array.from(' .,;:!?()"\'\nabcxyz')), maxLength: 40 });

describe('secret-shaped text', () => {
  it('finds every kind of capability anywhere in a text, and redaction removes all of it', () => {
    fc.assert(
      fc.property(proseArb, capabilityArb, proseArb, (before, capability, after) => {
        const text = `${before} ${capability} ${after}`;
        expect(containsSecretShape(text)).toBe(true);
        const redacted = redactSecretShapes(text);
        expect(redacted).toBe(`${before} [redacted] ${after}`);
        expect(containsSecretShape(redacted)).toBe(false);
      }),
    );
  });

  it('finds a capability cut short by a few characters, one with text stuck to it, a fal key and a PEM private key', () => {
    expect(containsSecretShape(generateCapability('executor').slice(0, -3))).toBe(true);
    expect(containsSecretShape(`${generateCapability('executor')}_backup`)).toBe(true);
    expect(containsSecretShape(`fal: ${randomUUID()}:${'0f'.repeat(16)} thanks`)).toBe(true);
    expect(containsSecretShape(`${randomUUID().toUpperCase()}:${'0F'.repeat(16)}`)).toBe(true);
    expect(containsSecretShape('-----BEGIN EC PRIVATE KEY-----')).toBe(true);
  });

  it('leaves ordinary prose alone, including text that mentions lexec, keys and UUIDs', () => {
    for (const text of [
      'a red fox in the snow',
      'lexec_agent is the kind of capability an agent holds',
      'lexec_notakind_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      `lexec_agent_${'A1'.repeat(19)}`,
      'lexec_agent_capability_rotation_test',
      'lexec_executor_credentials_bootstrap_managed_for_the_staging_stack',
      'Bearer of good news',
      `authorization ${randomUUID()}`,
      '-----BEGIN PUBLIC KEY-----',
    ]) {
      expect(containsSecretShape(text), text).toBe(false);
      expect(redactSecretShapes(text)).toBe(text);
    }
  });

  it.each(secretShapeExamples())('finds %s anywhere in a text, and redaction removes all of it (issue 24 item 8)', (_name, secret) => {
    for (const text of [secret, `please use ${secret} for this`, `prompt: a fox.\n${secret}\nthanks`]) {
      expect(containsSecretShape(text), text).toBe(true);
      const redacted = redactSecretShapes(text);
      expect(redacted).toContain('[redacted]');
      expect(containsSecretShape(redacted), redacted).toBe(false);
      // Nothing of the secret's random part is left behind.
      expect(redacted).not.toContain(secret.slice(-12));
    }
  });

  it('every shape has an example, and ordinary prose naming bearers, keys, tokens and headers is left alone', () => {
    const examples = secretShapeExamples().map(([, secret]) => secret);
    for (const { name, pattern } of SECRET_SHAPES) {
      expect(
        examples.some((secret) => {
          pattern.lastIndex = 0;
          return pattern.test(secret);
        }),
        name,
      ).toBe(true);
    }
    for (const text of PROSE) {
      expect(containsSecretShape(text), text).toBe(false);
      expect(redactSecretShapes(text)).toBe(text);
    }
  });

  it('answers on long adversarial texts (how long it takes: bench/secret-text, linear in the length)', () => {
    const texts = [`Bearer ${'a'.repeat(20_000)}`, `Authorization: ${'1'.repeat(20_000)}`, 'sk-'.repeat(6700), `key ${'ab1.'.repeat(5000)}`];
    for (const text of texts) {
      expect(containsSecretShape(text)).toBe(false);
      expect(redactSecretShapes(text)).toBe(text);
    }
  });

  it('is stateless across calls (global patterns do not carry a position)', () => {
    const text = `x ${generateCapability('agent')}`;
    for (let i = 0; i < 5; i += 1) expect(containsSecretShape(text)).toBe(true);
  });
});

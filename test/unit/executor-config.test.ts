import { describe, expect, it } from 'vitest';
import { LIVE_SPEND_ACKNOWLEDGEMENT } from '../../src/executor/config/executor-config-schema.js';
import { parseExecutorConfig } from '../../src/executor/config/parse-executor-config.js';
import { replacementNextStep } from '../../src/executor/credentials/register-configured-credentials.js';
import type { FieldIssue } from '../../src/errors.js';
import { distinctive, secretShapeExamples } from '../support/secret-shapes.js';
import {
  at,
  externalEngineConfig,
  formatPath,
  liveConfig,
  objectPaths,
  readTemplate,
  sandboxConfig,
  shippedExecutorTemplates,
  type Json,
  type JsonObject,
} from '../support/config-fixtures.js';

function issuesOf(document: unknown): readonly FieldIssue[] {
  const result = parseExecutorConfig(document);
  if (result.ok) throw new Error('expected the configuration to be rejected');
  return result.issues;
}

function issueAt(issues: readonly FieldIssue[], path: string): FieldIssue {
  const found = issues.find((issue) => issue.path === path);
  if (!found) throw new Error(`no issue at ${path}; issues: ${JSON.stringify(issues)}`);
  return found;
}

function mutate(base: JsonObject, change: (config: JsonObject) => void): JsonObject {
  change(base);
  return base;
}

function target(config: JsonObject): JsonObject {
  return (config.execution_targets as JsonObject[])[0] as JsonObject;
}

describe('shipped examples', () => {
  it('ships at least the main example', () => {
    expect(shippedExecutorTemplates()).toContain('executor.example.json');
  });

  it.each(shippedExecutorTemplates())('%s validates', (name) => {
    const result = parseExecutorConfig(readTemplate(name));
    expect(result.ok ? [] : result.issues).toEqual([]);
  });

  it('reads prices as exact integers and fills defaults', () => {
    const result = parseExecutorConfig(sandboxConfig());
    if (!result.ok) throw new Error('example must validate');
    const price = result.value.execution_targets[0]?.pricing.by_image_size.square_hd;
    expect(price).toEqual({ numerator: 3n, denominator: 1000n });
    expect(result.value.http.allow_non_loopback).toBe(false);
  });

  it('accepts the live, external-engine and disabled-provider forms', () => {
    for (const config of [liveConfig(), externalEngineConfig()]) {
      const result = parseExecutorConfig(config);
      expect(result.ok ? [] : result.issues).toEqual([]);
    }
  });
});

describe('unknown fields', () => {
  const bases: [string, () => JsonObject][] = [
    ['sandbox example', sandboxConfig],
    ['managed Temporal example', () => readTemplate('executor.managed-temporal.example.json')],
    ['live form', liveConfig],
    ['external engine', externalEngineConfig],
  ];

  for (const [name, make] of bases) {
    it(`are rejected at every depth of the ${name}, each with its path`, () => {
      const paths = objectPaths(make());
      expect(paths.length).toBeGreaterThan(5);
      for (const path of paths) {
        const config = make();
        (at(config, path) as JsonObject).unexpected_field = 1;
        const issues = issuesOf(config);
        const expected = path.length === 0 ? 'unexpected_field' : `${formatPath(path)}.unexpected_field`;
        expect(issueAt(issues, expected).message).toBe('unknown field');
      }
    });
  }

  it('reports every unknown field at once', () => {
    const config = mutate(sandboxConfig(), (c) => {
      c.extra_one = true;
      (c.http as JsonObject).extra_two = true;
      target(c).extra_three = true;
    });
    expect(issuesOf(config).map((issue) => issue.path)).toEqual(
      expect.arrayContaining(['extra_one', 'http.extra_two', 'execution_targets[0].extra_three']),
    );
  });
});

describe('required fields and types', () => {
  it.each(['schema_version', 'http', 'ledger', 'credentials', 'storage', 'workflow_engine', 'providers', 'execution_targets'])(
    'a missing %s is named as required',
    (field) => {
      const config = sandboxConfig();
      delete config[field];
      expect(issueAt(issuesOf(config), field).message).toMatch(/^required/);
    },
  );

  it.each([
    ['schema_version', 2, 'must be 3'],
    ['schema_version', '3', 'must be 3'],
    ['http', 'localhost:7410', 'must be an object'],
    ['execution_targets', {}, 'must be a list of execution targets'],
    ['development_allowance', 'no', 'must be true or false'],
  ] as [string, Json, string][])('%s of the wrong type (%j) says %s', (field, value, message) => {
    const config = sandboxConfig();
    config[field] = value;
    expect(issueAt(issuesOf(config), field).message).toBe(message);
  });

  it('rejects a document that is not an object', () => {
    for (const document of [[], 'config', 3, null]) {
      expect(issuesOf(document)).toEqual([{ path: '(document)', message: 'must be a JSON object' }]);
    }
  });

  it('names the missing pieces of nested objects', () => {
    const config = mutate(sandboxConfig(), (c) => {
      delete (c.ledger as JsonObject).product_version;
      delete (c.storage as JsonObject).artifact_root;
      delete target(c).pricing;
    });
    const issues = issuesOf(config);
    for (const path of ['ledger.product_version', 'storage.artifact_root', 'execution_targets[0].pricing']) {
      expect(issueAt(issues, path).message).toBe('required');
    }
  });
});

describe('ledger', () => {
  it.each(['v0.3.0', '0.3.0', 'v1.2.3-rc.1', 'v1.2.3-beta.2+build.7'])('pins the exact product version %s', (version) => {
    const config = mutate(sandboxConfig(), (c) => ((c.ledger as JsonObject).product_version = version));
    expect(parseExecutorConfig(config).ok).toBe(true);
  });

  it.each(['v0.3', '^0.3.0', '>=0.3.0', 'latest', 'v0.3.x'])('refuses the inexact version %s', (version) => {
    const config = mutate(sandboxConfig(), (c) => ((c.ledger as JsonObject).product_version = version));
    expect(issueAt(issuesOf(config), 'ledger.product_version').message).toContain('exact product version');
  });

  it.each(['ftp://127.0.0.1:7400', 'http://user:pw@127.0.0.1:7400', 'http://127.0.0.1:7400/?token=x', '127.0.0.1:7400', 'http://ledger.internal:7400'])(
    'refuses the endpoint %s',
    (endpoint) => {
      const config = mutate(sandboxConfig(), (c) => ((c.ledger as JsonObject).endpoint = endpoint));
      expect(issueAt(issuesOf(config), 'ledger.endpoint').message).toContain('https://');
    },
  );

  it.each(['http://127.0.0.1:7400', 'http://localhost:7400', 'http://[::1]:7400', 'https://ledger.internal:7400'])('accepts the endpoint %s', (endpoint) => {
    const config = mutate(sandboxConfig(), (c) => ((c.ledger as JsonObject).endpoint = endpoint));
    expect(parseExecutorConfig(config).ok).toBe(true);
  });
});

describe('workflow engine', () => {
  it.each(['embedded', 'managed_local', 'external'])('mode %s is one of the three modes', (mode) => {
    const config = mutate(sandboxConfig(), (c) => ((c.workflow_engine as JsonObject).mode = mode));
    const result = parseExecutorConfig(config);
    const modeIssue = result.ok ? undefined : result.issues.find((issue) => issue.path === 'workflow_engine.mode');
    expect(modeIssue).toBeUndefined();
  });

  it('refuses an unknown mode and names the allowed ones', () => {
    const config = mutate(sandboxConfig(), (c) => (c.workflow_engine = { mode: 'cloud' }));
    expect(issueAt(issuesOf(config), 'workflow_engine.mode').message).toBe('must be "embedded" or "managed_local" or "external"');
  });

  it('says the mode itself is required when it is missing', () => {
    const config = mutate(sandboxConfig(), (c) => (c.workflow_engine = {}));
    expect(issueAt(issuesOf(config), 'workflow_engine.mode').message).toMatch(/^required: /);
  });

  it('managed_local needs an absolute, version-pinned Temporal CLI and a data dir', () => {
    const config = mutate(sandboxConfig(), (c) => (c.workflow_engine = { mode: 'managed_local' }));
    const issues = issuesOf(config);
    expect(issueAt(issues, 'workflow_engine.temporal_cli').message).toBe('required');
    expect(issueAt(issues, 'workflow_engine.data_dir').message).toBe('required');

    const relative = readTemplate('executor.managed-temporal.example.json');
    (relative.workflow_engine as JsonObject).temporal_cli = { path: 'bin/temporal', version: '^1.4.1' };
    const pinned = issuesOf(relative);
    expect(issueAt(pinned, 'workflow_engine.temporal_cli.path').message).toContain('absolute path');
    expect(issueAt(pinned, 'workflow_engine.temporal_cli.version').message).toContain('exact version');
  });

  it.each(['address', 'namespace', 'ui_url'])('external mode requires %s', (field) => {
    const config = externalEngineConfig();
    delete (config.workflow_engine as JsonObject)[field];
    expect(issueAt(issuesOf(config), `workflow_engine.${field}`).message).toBe('required');
  });

  it.each([
    ['external', externalEngineConfig],
    ['managed_local', () => readTemplate('executor.managed-temporal.example.json')],
  ])('%s mode may leave task_queue unset (the installation\'s own queue), and keeps an explicit one', (_mode, base) => {
    const unset = base();
    delete (unset.workflow_engine as JsonObject).task_queue;
    const parsed = parseExecutorConfig(unset);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    expect(parsed.value.workflow_engine).not.toHaveProperty('task_queue');
    const explicit = base();
    (explicit.workflow_engine as JsonObject).task_queue = 'team-queue';
    const kept = parseExecutorConfig(explicit);
    expect(kept.ok && kept.value.workflow_engine.mode !== 'embedded' && kept.value.workflow_engine.task_queue).toBe('team-queue');
  });

  it('external mode wants a grpc:// address with a port', () => {
    const config = externalEngineConfig();
    (config.workflow_engine as JsonObject).address = 'temporal.internal.example';
    expect(issueAt(issuesOf(config), 'workflow_engine.address').message).toContain('grpc://');
  });
});

describe('providers', () => {
  it('accepts {"mode":"disabled"} and nothing more in it', () => {
    const disabled = mutate(sandboxConfig(), (c) => (c.providers = { mode: 'disabled' }));
    expect(parseExecutorConfig(disabled).ok).toBe(true);
    const extra = mutate(sandboxConfig(), (c) => (c.providers = { mode: 'disabled', base_url: 'http://127.0.0.1:1' }));
    expect(issueAt(issuesOf(extra), 'providers.base_url').message).toBe('unknown field');
  });

  it('keeps the sandbox provider on loopback', () => {
    const config = mutate(sandboxConfig(), (c) => ((c.providers as JsonObject).base_url = 'http://10.0.0.8:7420'));
    expect(issueAt(issuesOf(config), 'providers.base_url').message).toContain('loopback');
  });

  it('bounds the provider polling and the request timeout, with defaults, and refuses a maximum below the initial wait', () => {
    const parsed = parseExecutorConfig(sandboxConfig());
    if (!parsed.ok || parsed.value.providers.mode !== 'sandbox') throw new Error('the sandbox example must parse');
    expect(parsed.value.providers).toMatchObject({ poll_initial_ms: 100, poll_max_ms: 5_000, request_timeout_seconds: 30 });
    const inverted = mutate(sandboxConfig(), (c) => Object.assign(c.providers as JsonObject, { poll_initial_ms: 2_000, poll_max_ms: 500 }));
    expect(issueAt(issuesOf(inverted), 'providers.poll_max_ms').message).toBe('must be at least poll_initial_ms');
    const tooFast = mutate(sandboxConfig(), (c) => Object.assign(c.providers as JsonObject, { poll_initial_ms: 1, request_timeout_seconds: 0 }));
    expect(issueAt(issuesOf(tooFast), 'providers.poll_initial_ms').message).toBe('must be at least 10');
    expect(issueAt(issuesOf(tooFast), 'providers.request_timeout_seconds').message).toBe('must be at least 1');
  });

  it('needs at least one execution target unless disabled', () => {
    const config = mutate(sandboxConfig(), (c) => (c.execution_targets = []));
    expect(issueAt(issuesOf(config), 'execution_targets').message).toContain('at least one target');
  });

  describe('live form', () => {
    it.each(['target_id', 'credential', 'spend_ceiling', 'acknowledgement'])('names a missing %s', (field) => {
      const config = liveConfig();
      delete (config.providers as JsonObject)[field];
      expect(issueAt(issuesOf(config), `providers.${field}`).message).toBe('required');
    });

    it('names every missing requirement at once', () => {
      const config = mutate(liveConfig(), (c) => {
        c.providers = { mode: 'live' };
        delete (target(c).pricing as { by_image_size: JsonObject }).by_image_size.square;
      });
      const paths = issuesOf(config).map((issue) => issue.path);
      expect(paths).toEqual(
        expect.arrayContaining(['providers.target_id', 'providers.credential', 'providers.spend_ceiling', 'providers.acknowledgement']),
      );
    });

    it('names incomplete pricing: every preset of the exact target must be priced', () => {
      const config = mutate(liveConfig(), (c) => {
        delete (target(c).pricing as { by_image_size: JsonObject }).by_image_size.landscape_16_9;
      });
      const issue = issueAt(issuesOf(config), 'execution_targets[0].pricing.by_image_size.landscape_16_9');
      expect(issue.message).toContain('complete pricing');
    });

    it('refuses a free price in live mode', () => {
      const config = mutate(liveConfig(), (c) => {
        (target(c).pricing as { by_image_size: Record<string, JsonObject> }).by_image_size.square = { numerator: 0, denominator: 1 };
      });
      expect(issueAt(issuesOf(config), 'execution_targets[0].pricing.by_image_size.square.numerator').message).toContain('positive');
    });

    it('needs the target id to name an approved execution target', () => {
      const config = mutate(liveConfig(), (c) => ((c.providers as JsonObject).target_id = 'lexec:target:v1:not-approved'));
      expect(issueAt(issuesOf(config), 'providers.target_id').message).toContain('exact target');
    });

    it.each([['0'], [0], ['-5'], [1.5], ['1e6']] as [Json][])('refuses the spend ceiling %j', (amount) => {
      const config = mutate(liveConfig(), (c) => (((c.providers as JsonObject).spend_ceiling as JsonObject).amount_units = amount));
      expect(issueAt(issuesOf(config), 'providers.spend_ceiling.amount_units').message).toMatch(/at least 1|whole number/);
    });

    it('requires the literal acknowledgement, not something like it', () => {
      for (const text of [LIVE_SPEND_ACKNOWLEDGEMENT.toLowerCase(), `${LIVE_SPEND_ACKNOWLEDGEMENT}.`, 'yes', true]) {
        const config = mutate(liveConfig(), (c) => ((c.providers as JsonObject).acknowledgement = text));
        expect(issueAt(issuesOf(config), 'providers.acknowledgement').message).toContain(LIVE_SPEND_ACKNOWLEDGEMENT);
      }
    });

    it('takes the credential by secret coordinates only', () => {
      const config = mutate(liveConfig(), (c) => ((c.providers as JsonObject).credential = { store: 'file', path: 'fal.key' }));
      expect(issueAt(issuesOf(config), 'providers.credential.path').message).toContain('absolute path');
      const raw = mutate(liveConfig(), (c) => ((c.providers as JsonObject).credential = 'my-raw-key'));
      expect(issueAt(issuesOf(raw), 'providers.credential').message).toContain('secret reference');
    });
  });
});

describe('orphan claims', () => {
  it('releases claims without an execution after 300 s unless set, and bounds the setting well above the admission\'s ledger timeout', () => {
    const parsed = parseExecutorConfig(sandboxConfig());
    if (!parsed.ok) throw new Error('the sandbox example must parse');
    expect(parsed.value.orphan_claims).toEqual({ release_after_seconds: 300 });
    const set = parseExecutorConfig(mutate(sandboxConfig(), (c) => (c.orphan_claims = { release_after_seconds: 15 })));
    expect(set.ok && set.value.orphan_claims.release_after_seconds).toBe(15);
    for (const [value, message] of [
      [14, 'must be at least 15 (three times the admission\'s ledger timeout)'],
      [86_401, 'must be at most 86400 (one day)'],
      [30.5, 'must be a whole number of seconds'],
      ['300', 'must be a whole number of seconds'],
    ] as const) {
      const config = mutate(sandboxConfig(), (c) => (c.orphan_claims = { release_after_seconds: value }));
      expect(issueAt(issuesOf(config), 'orphan_claims.release_after_seconds').message).toBe(message);
    }
    const unknown = mutate(sandboxConfig(), (c) => (c.orphan_claims = { release_after_seconds: 60, sweep_seconds: 5 }));
    expect(issueAt(issuesOf(unknown), 'orphan_claims.sweep_seconds').message).toBe('unknown field');
  });
});

describe('paths', () => {
  it.each(['database_path', 'artifact_root', 'catalog_path'])('storage.%s must be absolute and normalised', (field) => {
    for (const [value, message] of [
      ['state/executor.db', 'absolute path'],
      ['/var/lib/../lib/lexec/x', 'normalised'],
      ['/var/lib//lexec/x', 'normalised'],
    ]) {
      const config = mutate(sandboxConfig(), (c) => ((c.storage as JsonObject)[field] = value ?? ''));
      expect(issueAt(issuesOf(config), `storage.${field}`).message).toContain(message);
    }
  });

  it('keeps state locations apart', () => {
    const same = mutate(sandboxConfig(), (c) => ((c.storage as JsonObject).catalog_path = '/var/lib/lexec/executor.db'));
    expect(issueAt(issuesOf(same), 'storage.catalog_path').message).toBe('must differ from storage.database_path');
    const inside = mutate(sandboxConfig(), (c) => ((c.storage as JsonObject).database_path = '/var/lib/lexec/artifacts/executor.db'));
    expect(issueAt(issuesOf(inside), 'storage.database_path').message).toBe('must not be inside storage.artifact_root');
  });

  it('managed credentials live in an absolute state directory', () => {
    const config = mutate(sandboxConfig(), (c) => (c.credentials = { mode: 'managed', state_dir: 'credentials' }));
    expect(issueAt(issuesOf(config), 'credentials.state_dir').message).toContain('absolute path');
  });
});

describe('HTTP listen address', () => {
  it('defaults to loopback', () => {
    const config = mutate(sandboxConfig(), (c) => (c.http = { port: 7410 }));
    const result = parseExecutorConfig(config);
    expect(result.ok && result.value.http.host).toBe('127.0.0.1');
  });

  it.each(['127.0.0.1', '127.8.9.10', '::1', 'localhost'])('accepts the loopback host %s', (host) => {
    const config = mutate(sandboxConfig(), (c) => ((c.http as JsonObject).host = host));
    expect(parseExecutorConfig(config).ok).toBe(true);
  });

  it('refuses a non-loopback host unless explicitly allowed', () => {
    const config = mutate(sandboxConfig(), (c) => ((c.http as JsonObject).host = '0.0.0.0'));
    expect(issueAt(issuesOf(config), 'http.host').message).toContain('loopback');
    (config.http as JsonObject).allow_non_loopback = true;
    // Allowed, yet beyond loopback only over TLS (tls_required at http.tls).
    expect(issueAt(issuesOf(config), 'http.tls').message).toMatch(/^tls_required: /);
    (config.http as JsonObject).tls = { certificate_file: '/etc/lexec/server.pem', key_file: '/etc/lexec/server.key' };
    expect(parseExecutorConfig(config).ok).toBe(true);
  });

  it('refuses a non-loopback host without TLS whatever allow_non_loopback says', () => {
    const config = mutate(sandboxConfig(), (c) => ((c.http as JsonObject).host = '192.0.2.10'));
    expect(issueAt(issuesOf(config), 'http.tls').message).toMatch(/^tls_required: /);
    (config.http as JsonObject).tls = { certificate_file: 'server.pem', key_file: '/etc/lexec/server.key' };
    expect(issueAt(issuesOf(config), 'http.tls.certificate_file').message).toContain('absolute');
  });

  it.each([[-1], [65536], [80.5], ['7410']] as [Json][])('refuses the port %j', (port) => {
    const config = mutate(sandboxConfig(), (c) => ((c.http as JsonObject).port = port));
    expect(issueAt(issuesOf(config), 'http.port').message).toMatch(/port/);
  });
});

describe('execution targets', () => {
  it.each(['flux-schnell', 'lexec:target:v2:flux', 'other:target:v1:flux', 'lexec:target:v1:', 'lexec:target:v1:a b'])(
    'refuses the target id %s',
    (id) => {
      const config = mutate(sandboxConfig(), (c) => (target(c).target_id = id));
      expect(issueAt(issuesOf(config), 'execution_targets[0].target_id').message).toContain('lexec:target:v1:<id>');
    },
  );

  it('refuses a repeated target id', () => {
    const config = mutate(sandboxConfig(), (c) => (c.execution_targets as Json[]).push(structuredClone(target(c))));
    expect(issueAt(issuesOf(config), 'execution_targets[1].target_id').message).toContain('repeats');
  });

  it('refuses unknown and repeated presets, and prices for presets not offered', () => {
    const unknown = mutate(sandboxConfig(), (c) => (target(c).presets = ['square', 'huge']));
    expect(issueAt(issuesOf(unknown), 'execution_targets[0].presets[1]').message).toContain('square_hd');
    const repeated = mutate(sandboxConfig(), (c) => (target(c).presets = ['square', 'square_hd', 'square']));
    expect(issueAt(issuesOf(repeated), 'execution_targets[0].presets[2]').message).toBe('is listed twice');
    const unoffered = mutate(sandboxConfig(), (c) => (target(c).presets = ['square']));
    expect(issueAt(issuesOf(unoffered), 'execution_targets[0].pricing.by_image_size.square_hd').message).toContain('does not offer');
  });

  it('accepts prices as digit strings of any size or safe JSON integers', () => {
    const config = mutate(sandboxConfig(), (c) => {
      (target(c).pricing as { by_image_size: Record<string, Json> }).by_image_size.square = {
        numerator: '9223372036854775807',
        denominator: 1000,
      };
    });
    const result = parseExecutorConfig(config);
    expect(result.ok && result.value.execution_targets[0]?.pricing.by_image_size.square).toEqual({
      numerator: 9_223_372_036_854_775_807n,
      denominator: 1000n,
    });
  });

  it.each([[0.003], ['0.003'], ['-3'], ['3e3'], [' 3'], ['9223372036854775808'], [true]] as [Json][])(
    'refuses the price numerator %j (no floats, signs, exponents or overflow)',
    (numerator) => {
      const config = mutate(sandboxConfig(), (c) => {
        (target(c).pricing as { by_image_size: Record<string, Json> }).by_image_size.square = { numerator, denominator: '1000' };
      });
      expect(issueAt(issuesOf(config), 'execution_targets[0].pricing.by_image_size.square.numerator').message).toMatch(
        /whole number|largest storable/,
      );
    },
  );

  it('refuses a zero denominator and a pricing currency other than USD', () => {
    const config = mutate(sandboxConfig(), (c) => {
      const pricing = target(c).pricing as JsonObject;
      pricing.currency = 'EUR';
      (pricing.by_image_size as Record<string, Json>).square = { numerator: '3', denominator: '0' };
    });
    const issues = issuesOf(config);
    expect(issueAt(issues, 'execution_targets[0].pricing.currency').message).toBe('must be "USD"');
    expect(issueAt(issues, 'execution_targets[0].pricing.by_image_size.square.denominator').message).toContain('at least 1');
  });

  it('bounds the image count at the provider maximum', () => {
    const config = mutate(sandboxConfig(), (c) => (target(c).max_image_count = 5));
    expect(issueAt(issuesOf(config), 'execution_targets[0].max_image_count').message).toBe('must be at most 4');
  });

  it('send_seed: sent by default (the shipped fal image models take a seed), false for a model that refuses one, nothing else', () => {
    const parsed = (change: (c: JsonObject) => void) => {
      const result = parseExecutorConfig(mutate(sandboxConfig(), change));
      if (!result.ok) throw new Error(JSON.stringify(result.issues));
      return result.value.execution_targets[0]?.send_seed;
    };
    expect(parsed(() => undefined)).toBe(true);
    expect(parsed((c) => (target(c).send_seed = false))).toBe(false);
    expect(issueAt(issuesOf(mutate(sandboxConfig(), (c) => (target(c).send_seed = 'no'))), 'execution_targets[0].send_seed').message).toBe('must be true or false');
  });
});

describe('secrets', () => {
  const secrets = [
    'lexec_cap_9f8e7d6c5b4a39281706f5e4d3c2b1a0ZZ',
    '01234567-89ab-cdef-0123-456789abcdef:0123456789abcdef0123456789abcdef',
    'Key 0123456789abcdef',
    'Bearer abcdefghijklmnop',
  ];

  it.each(secrets)('a raw secret in any field is refused by path, never echoed (%#)', (secret) => {
    const config = mutate(sandboxConfig(), (c) => (target(c).label = secret));
    const issues = issuesOf(config);
    expect(issueAt(issues, 'execution_targets[0].label').message).toContain('raw secret');
    expect(JSON.stringify(issues)).not.toContain(secret);
  });

  it.each(secretShapeExamples())('a label holding %s inside prose is refused by path, never echoed (issue 24 item 8)', (_name, secret) => {
    const config = mutate(sandboxConfig(), (c) => (target(c).label = `Flux, see ${secret} for access`));
    const issues = issuesOf(config);
    expect(issueAt(issues, 'execution_targets[0].label').message).toContain('raw secret');
    expect(JSON.stringify(issues)).not.toContain(distinctive(secret));
  });

  it('an unknown field holding a key is reported without its value or a secret-shaped name', () => {
    const config = mutate(sandboxConfig(), (c) => {
      (c.providers as JsonObject).api_key = 'sk-live-0123456789abcdef';
      (c.http as JsonObject)['lexec_cap_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'] = 1;
    });
    const issues = issuesOf(config);
    expect(issueAt(issues, 'providers.api_key').message).toBe('unknown field');
    const text = JSON.stringify(issues);
    expect(text).not.toContain('sk-live-0123456789abcdef');
    expect(text).not.toContain('AAAAAAAAAAAAAAAAAAAAAAAA');
  });
});

describe('diagnostics never echo submitted values', () => {
  it('reports paths and expectations only', () => {
    const marker = 'MARKER-d41d8cd98f00b204';
    const config = mutate(liveConfig(), (c) => {
      c.schema_version = marker;
      (c.http as JsonObject).port = marker;
      (c.ledger as JsonObject).endpoint = marker;
      (c.ledger as JsonObject).product_version = marker;
      (c.storage as JsonObject).database_path = marker;
      (c.providers as JsonObject).acknowledgement = marker;
      ((c.providers as JsonObject).spend_ceiling as JsonObject).amount_units = marker;
      target(c).target_id = marker;
      target(c).model = marker;
      target(c).presets = [marker];
      (c.workflow_engine as JsonObject).mode = marker;
    });
    const issues = issuesOf(config);
    expect(issues.length).toBeGreaterThanOrEqual(11);
    expect(JSON.stringify(issues)).not.toContain('MARKER');
  });
});

describe('how to replace a configured capability (the next step of a refusal)', () => {
  const managed = () => {
    const result = parseExecutorConfig(mutate(sandboxConfig(), (c) => (c.credentials = { mode: 'managed', state_dir: '/var/lib/lexec/credentials' })));
    if (!result.ok) throw new Error('the managed form must validate');
    return result.value;
  };

  it('a managed executor rotates its caller and reconciliation capabilities itself', () => {
    for (const kind of ['caller', 'reconciliation'] as const) {
      expect(replacementNextStep(managed(), kind, '/etc/lexec/executor.json')).toContain(`lexec executor credentials rotate --config /etc/lexec/executor.json --role ${kind}`);
    }
  });

  it('its metrics capability, shared with the ledger, through the stack — never the executor command that refuses that role', () => {
    const step = replacementNextStep(managed(), 'metrics', '/etc/lexec/executor.json');
    expect(step).toContain('lexec stack credentials rotate --role metrics');
    expect(step).not.toContain('executor credentials rotate');
  });
});

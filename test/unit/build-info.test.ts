import { describe, expect, it } from 'vitest';
import { interpretBuildStamp, readBuildInfo } from '../../src/build-info.js';

const COMMIT = '0123456789abcdef0123456789abcdef01234567';

describe('interpretBuildStamp', () => {
  it('keeps a well-formed stamp', () => {
    expect(interpretBuildStamp({ commit: COMMIT, build_kind: 'release' })).toEqual({ commit: COMMIT, build_kind: 'release' });
    expect(interpretBuildStamp({ commit: COMMIT, build_kind: 'development' })).toEqual({ commit: COMMIT, build_kind: 'development' });
  });

  it.each([
    ['no stamp', null],
    ['not an object', 'release'],
    ['short commit', { commit: COMMIT.slice(0, 12), build_kind: 'release' }],
    ['upper-case commit', { commit: COMMIT.toUpperCase(), build_kind: 'release' }],
    ['unknown kind', { commit: COMMIT, build_kind: 'nightly' }],
    ['missing kind', { commit: COMMIT }],
  ])('treats %s as an unstamped development build', (_name, stamp) => {
    expect(interpretBuildStamp(stamp)).toEqual({ commit: 'unknown', build_kind: 'development' });
  });
});

describe('readBuildInfo', () => {
  it('reports the package version with a leading v and contract v4.5', async () => {
    const pkg = (await import('../../package.json', { with: { type: 'json' } })).default;
    const info = readBuildInfo();
    expect(info.product).toBe('lexec');
    expect(info.product_version).toBe(`v${pkg.version}`);
    expect(info.contract_version).toBe('v4.5');
  });
});

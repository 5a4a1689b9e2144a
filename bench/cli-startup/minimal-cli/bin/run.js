#!/usr/bin/env node
// Entry point of the minimal fixture CLI (bench/cli-startup). @oclif/core resolves from the
// repository's node_modules, two directories up.
import { execute } from '@oclif/core';

await execute({ dir: import.meta.url });

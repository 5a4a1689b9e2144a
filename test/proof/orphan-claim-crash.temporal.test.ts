import { orphanClaimCrash } from './orphan-claim-crash.js';

// An admission killed after its claim, never retried, on a real Temporal server (orphan-claim-crash.ts).
orphanClaimCrash('temporal');

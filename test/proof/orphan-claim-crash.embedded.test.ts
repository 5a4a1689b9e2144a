import { orphanClaimCrash } from './orphan-claim-crash.js';

// An admission killed after its claim, never retried, on the embedded engine (orphan-claim-crash.ts).
orphanClaimCrash('embedded');

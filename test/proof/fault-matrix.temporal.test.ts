import { faultMatrix } from './fault-matrix.js';

// The fault matrix on a real Temporal server (the cases and their dispositions: fault-matrix.ts).
faultMatrix('Temporal');

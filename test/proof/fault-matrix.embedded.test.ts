import { faultMatrix } from './fault-matrix.js';

// The fault matrix on the embedded engine (the cases and their dispositions: fault-matrix.ts).
faultMatrix('embedded');

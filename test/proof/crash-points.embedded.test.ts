import { crashMatrix } from './crash-matrix.js';

// Every crash point on the embedded engine (the matrix and its dispositions: crash-matrix.ts).
crashMatrix('embedded');

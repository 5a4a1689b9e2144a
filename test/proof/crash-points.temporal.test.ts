import { crashMatrix } from './crash-matrix.js';

// Every crash point on a real Temporal server (the matrix and its dispositions: crash-matrix.ts).
crashMatrix('temporal');

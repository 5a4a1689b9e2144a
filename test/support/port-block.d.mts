// Types of port-block.mjs for the TypeScript tests that import it.

export interface PortRange {
  readonly first: number;
  readonly last: number;
}

export interface EphemeralRange {
  readonly low: number;
  readonly high: number;
}

export declare const BLOCK_SIZE: number;
export declare function ephemeralRange(read?: () => string): EphemeralRange;
export declare function reservedRange(ephemeral?: EphemeralRange): PortRange;
export declare function portBlock(): Promise<PortRange>;
export declare function reservePorts(count: number): Promise<number[]>;
export declare function isBindConflict(output: string): boolean;

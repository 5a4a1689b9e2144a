import { formatUnits } from '../domain/money.js';

/** An amount as every console answer carries it: its exact digit string, and a display string formatted here (the page never does arithmetic on money). */
export interface Money {
  readonly units: string;
  readonly display: string;
}

export function money(units: bigint, currency: string): Money {
  return { units: units.toString(), display: formatUnits(units, currency) };
}

export const maybeMoney = (units: bigint | null, currency: string): Money | null => (units === null ? null : money(units, currency));

/** Longest prompt accepted, in characters: by the executor (an execution's input) and by the ledger (the prompt a spend request pays for). */
export const MAX_PROMPT_CHARS = 4000;

// The one exact formatter lives with the money rules, so every surface (CLI, console) shares it.
export { formatUnits } from '../domain/money.js';

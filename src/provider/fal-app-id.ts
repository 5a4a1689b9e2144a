/**
 * fal's app id of a model id: its owner and alias, without the sub-path (`fal-ai/flux/schnell`
 * → `fal-ai/flux`). fal names status, result and cancel URLs by it; the executor's client and the
 * sandbox provider both follow that shape.
 */
export function appIdOf(model: string): string {
  return model.split('/').slice(0, 2).join('/');
}

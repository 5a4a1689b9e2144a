/**
 * The four facts of a configured provider catalog computed locally (the doctor's and `stack
 * catalog`'s): no credential reference resolved, nothing validated or qualified. They are
 * independent: configured implies none of the others.
 */
export const LOCAL_CATALOG_FACTS = {
  configured: true,
  credential_reference_present: false,
  production_validated: false,
  production_validated_reason: 'not_performed',
  live_qualified: false,
  live_qualified_reason: 'not_performed',
} as const;

/** The executor contract version every lexec component reports (spec §9). */
export const CONTRACT_VERSION = 'v4.5';

/** The product name, also the service prefix of execution target ids. */
export const PRODUCT_NAME = 'lexec';

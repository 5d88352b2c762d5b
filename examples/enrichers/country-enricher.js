'use strict';
/**
 * A custom context enricher for flags-proxy.
 *
 * Sets the context property `country` from the `CloudFront-Viewer-Country` or `CF-IPCountry`
 * header that a CDN in front of the proxy adds, unless the client already sent one. Strategy
 * constraints can then use `country`, e.g. `{ contextName: 'country', operator: 'IN', values: ['NO'] }`.
 *
 * Load it with EXP_CUSTOM_ENRICHERS_FILE=examples/enrichers/country-enricher.js
 * (or `expCustomEnrichers: ['examples/enrichers/country-enricher.js']` in code).
 * A file exports an array of functions `(context, request) => context` (or a Promise of one);
 * they run in order after the proxy has built the context.
 */
function countryFromHeaders(context, request) {
  const header = request.get('cloudfront-viewer-country') || request.get('cf-ipcountry');
  const properties = context.properties || {};
  if (!header || properties.country) return context;
  return { ...context, properties: { ...properties, country: header.trim().toUpperCase() } };
}

module.exports = [countryFromHeaders];

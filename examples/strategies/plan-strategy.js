'use strict';
/**
 * A custom activation strategy for flags-proxy.
 *
 * Strategy "plan" is enabled when the context property `plan` is one of the comma-separated values
 * of the strategy parameter `plans`, e.g. parameters `{ "plans": "pro,enterprise" }`.
 *
 * Load it with FLAGS_CUSTOM_STRATEGIES_FILE=examples/strategies/plan-strategy.js
 * (or `customStrategies: ['examples/strategies/plan-strategy.js']` in code).
 * A file exports an array of strategy instances; it may export any number of them.
 */
const { Strategy } = require('unleash-client');

class PlanStrategy extends Strategy {
  constructor() {
    super('plan');
  }

  isEnabled(parameters, context) {
    const plan = context.properties && context.properties.plan;
    if (!plan) return false;
    const plans = String((parameters && parameters.plans) || '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    return plans.includes(plan);
  }
}

module.exports = [new PlanStrategy()];

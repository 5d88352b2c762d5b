import { AddressBudget, budgetHolder } from '../../../src/proxy/edge-api/address-budget';

describe('whose budget an address spends', () => {
  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
  ])('%s spends the budget of %s', (address, holder) => {
    expect(budgetHolder(address)).toBe(holder);
  });

  test('two addresses of one IPv6 /64 share a budget; another /64 has its own', () => {
    const budget = new AddressBudget(1);
    expect(budget.spend(budgetHolder('2001:db8:1:2::1'), 250, 0)).toBe(0);
    expect(budget.spend(budgetHolder('2001:db8:1:2::ffff'), 1, 0)).toBe(1);
    expect(budget.spend(budgetHolder('2001:db8:1:3::1'), 250, 0)).toBe(0);
  });
});

describe('the budget of tokens per second', () => {
  test('at once: one second’s worth, at least one full request of 250', () => {
    expect(new AddressBudget(1).burst).toBe(250);
    expect(new AddressBudget(1000).burst).toBe(1000);
  });

  test('refills at its rate; past it, the seconds until the tokens fit, and nothing spent', () => {
    const budget = new AddressBudget(100);
    expect(budget.spend('a', 250, 0)).toBe(0);
    expect(budget.spend('a', 100, 0)).toBe(1);
    expect(budget.spend('a', 250, 0)).toBe(3);
    // half a second later: 50 tokens back
    expect(budget.spend('a', 50, 500)).toBe(0);
    expect(budget.spend('a', 1, 500)).toBe(1);
    // never more than the burst, however long the pause
    expect(budget.spend('a', 250, 1_000_000)).toBe(0);
    expect(budget.spend('a', 1, 1_000_000)).toBe(1);
  });

  test('remembers at most 10,000 addresses, forgetting the one used longest ago (a full budget again)', () => {
    const budget = new AddressBudget(1);
    for (let i = 0; i < 10_001; i++) expect(budget.spend(`10.0.${i >> 8}.${i & 255}`, 250, 0)).toBe(0);
    expect(budget.size).toBe(10_000);
    // the first was forgotten; the second still spent
    expect(budget.spend('10.0.0.0', 250, 0)).toBe(0);
    expect(budget.spend('10.0.0.2', 250, 0)).toBe(250);
  });
});

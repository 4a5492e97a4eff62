import pytest
from account import Account, InsufficientFunds


def test_transfer():
    alice, bob = Account("alice", 100), Account("bob", 5)
    alice.transfer(bob, 30)
    assert (alice.balance, bob.balance) == (70, 35)


def test_insufficient_funds_changes_nothing():
    alice, bob = Account("alice", 10), Account("bob", 5)
    with pytest.raises(InsufficientFunds):
        alice.transfer(bob, 11)
    assert (alice.balance, bob.balance) == (10, 5)


def test_existing_methods():
    account = Account("carol")
    account.deposit(5)
    account.withdraw(2)
    assert account.balance == 3

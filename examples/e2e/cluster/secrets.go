package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeServiceAccountKey writes an RSA-2048 signing key (PKCS#1 PEM) and its
// public key (PKIX PEM) for the apiserver's service-account token flags.
func writeServiceAccountKey(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("cluster: service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("cluster: service-account key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
		return fmt.Errorf("cluster: service-account key: %w", err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return fmt.Errorf("cluster: service-account key: %w", err)
	}
	return nil
}

// newToken returns 24 random bytes in hex.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cluster: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeTokenFile writes the static token file (CSV: token, user, uid,
// then the groups as one quoted field): one admin in system:masters, then
// each of users with its token (tokens[i]). A user without groups has no
// groups field: an empty one would be a group named "". Names and groups
// hold no comma or quote (checked by Start).
func writeTokenFile(path, token string, users []TokenUser, tokens []string) error {
	lines := token + ",admin,admin-uid,system:masters\n"
	for i, u := range users {
		lines += tokens[i] + "," + u.Name + "," + u.Name + "-uid"
		if len(u.Groups) > 0 {
			lines += `,"` + strings.Join(u.Groups, ",") + `"`
		}
		lines += "\n"
	}
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		return fmt.Errorf("cluster: token file: %w", err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig with one context "lifecycle-e2e" that
// trusts caFile and authenticates with the bearer token.
func writeKubeconfig(path, server, caFile, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lifecycle-e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token} // the kubeconfig's own name, whoever the token is
	cfg.Contexts["lifecycle-e2e"] = &clientcmdapi.Context{Cluster: "lifecycle-e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "lifecycle-e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("cluster: kubeconfig: %w", err)
	}
	return nil
}
